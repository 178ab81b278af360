"""Bad arguments raise ValueError naming them; kernel errors keep their errno."""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import benchfs_native as bn


@pytest.fixture
def store(tmp_path: Path) -> Iterator[bn.ChunkStore]:
    s = bn.ChunkStore(str(tmp_path / "store"), chunk_size=4096)
    yield s
    s.close()


@pytest.mark.parametrize(
    "path", ["../escape", "/etc/passwd", "a/../../b", "", "a\0b", "a//b", "a/."]
)
def test_escaping_or_malformed_paths_are_rejected(store: bn.ChunkStore, path: str) -> None:
    for call in (
        lambda: store.write(path, 0, b"x"),
        lambda: store.read(path, 0, 1),
        lambda: store.stat(path),
        lambda: store.remove(path),
        lambda: store.truncate(path, 0),
        lambda: store.fsync(path),
    ):
        with pytest.raises(ValueError, match="invalid path") as e:
            call()
        assert repr(path)[1:-1].replace("\\x00", "") in str(e.value).replace("\\0", "")
    assert store.list() == []


def test_negative_offset_and_absurd_length(store: bn.ChunkStore) -> None:
    store.write("f", 0, b"x")
    with pytest.raises(ValueError, match="offset"):
        store.read("f", -1, 1)
    with pytest.raises(ValueError, match="offset"):
        store.write("f", -5, b"x")
    with pytest.raises(ValueError, match="length"):
        store.read("f", 0, -1)
    with pytest.raises(ValueError, match="length"):
        store.read("f", 0, 1 << 40)
    with pytest.raises(ValueError, match="length"):
        store.read("f", 0, 1 << 100)
    with pytest.raises(ValueError, match="size"):
        store.truncate("f", -1)
    with pytest.raises(ValueError, match="offset"):
        store.write("f", 1 << 63, b"x")
    with pytest.raises(TypeError, match="bytes-like object is required"):
        store.write("f", 0, "not bytes")  # type: ignore[arg-type]


def test_missing_file_is_file_not_found(store: bn.ChunkStore) -> None:
    for call, op in (
        (lambda: store.read("nope/x", 0, 10), "read"),
        (lambda: store.stat("nope/x"), "stat"),
        (lambda: store.remove("nope/x"), "remove"),
        (lambda: store.truncate("nope/x", 5), "truncate"),
        (lambda: store.fsync("nope/x"), "fsync"),
    ):
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert e.value.errno == errno.ENOENT
        assert e.value.filename == "nope/x"
        assert op in str(e.value)


def test_too_long_name_is_enametoolong(store: bn.ChunkStore) -> None:
    with pytest.raises(OSError) as e:
        store.write("x" * 300, 0, b"x")
    assert e.value.errno == errno.ENAMETOOLONG


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"chunk_size": 1000}, "chunk_size"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"chunk_size": -4096}, "chunk_size"),
        ({"buffer_size": 100}, "buffer_size"),
        ({"pool_buffers": 0}, "pool_buffers"),
        ({"pool_buffers": 1 << 20}, "pool_buffers"),
        ({"ring_entries": 0}, "ring_entries"),
        ({"node": "a/b"}, "node"),
        ({"node_id": -1}, "node_id"),
        ({"node_id": 70000}, "node_id"),
    ],
)
def test_bad_store_options(tmp_path: Path, kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        bn.ChunkStore(str(tmp_path), **kwargs)  # type: ignore[arg-type]


def test_root_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_bytes(b"")
    with pytest.raises(OSError) as e:
        bn.ChunkStore(str(f))
    assert e.value.errno in (errno.EEXIST, errno.ENOTDIR)


def test_closed_store(tmp_path: Path) -> None:
    s = bn.ChunkStore(str(tmp_path))
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.write("x", 0, b"x")
    with pytest.raises(ValueError, match="closed"):
        s.list()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"pattern": "sideways"}, "pattern"),
        ({"block_size": 100}, "block_size"),
        ({"block_size": -1}, "block_size"),
        ({"queue_depth": 0}, "queue_depth"),
        ({"files": 0}, "files"),
        ({"total_bytes": 10}, "total_bytes"),
        ({"total_bytes": -10}, "total_bytes"),
    ],
)
def test_bad_bench_arguments(tmp_path: Path, kwargs: dict[str, object], name: str) -> None:
    args: dict[str, object] = {
        "pattern": "write",
        "block_size": 4096,
        "queue_depth": 4,
        "total_bytes": 1 << 20,
        "direct": False,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        bn.bench_storage(str(tmp_path), **args)  # type: ignore[arg-type]


def test_forked_child_gets_a_clear_error(tmp_path: Path) -> None:
    s = bn.ChunkStore(str(tmp_path))
    s.write("x", 0, b"x")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            s.read("x", 0, 1)
        except RuntimeError as e:
            code = 0 if "fork" in str(e) else 2
        except BaseException:
            code = 3
        try:
            s.close()  # must return, not wait for the parent's driver thread
        except BaseException:
            code = 4
        os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child hung")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    assert s.read("x", 0, 1) == b"x"
    s.close()
