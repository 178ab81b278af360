"""Round trips through the engine, verified byte for byte against a model."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchfs_native as bn

CHUNK = 4096
_names = itertools.count()


@pytest.fixture(scope="module", params=[False, True], ids=["auto-direct", "buffered"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[bn.ChunkStore]:
    root = tmp_path_factory.mktemp("store")
    s = bn.ChunkStore(
        str(root), chunk_size=CHUNK, buffer_size=8192, pool_buffers=8, buffered=request.param
    )
    yield s
    s.close()


writes = st.lists(
    st.tuples(st.integers(0, 5 * CHUNK), st.binary(min_size=0, max_size=3 * CHUNK)),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=writes, reads=st.lists(st.tuples(st.integers(0, 9 * CHUNK), st.integers(0, 4 * CHUNK))))
def test_random_writes_read_back_like_a_bytearray(
    store: bn.ChunkStore, ops: list[tuple[int, bytes]], reads: list[tuple[int, int]]
) -> None:
    path = f"dir/file{next(_names)}.bin"
    model = bytearray()
    for offset, data in ops:
        assert store.write(path, offset, data) == len(data)
        if not data:
            continue  # like pwrite: an empty write creates the file, never extends it
        end = offset + len(data)
        if len(model) < end:
            model.extend(bytes(end - len(model)))
        model[offset:end] = data
    assert store.stat(path) == {"path": path, "size": len(model)}
    assert store.read(path, 0, len(model) + CHUNK) == bytes(model)
    for offset, length in reads:
        assert store.read(path, offset, length) == bytes(model[offset : offset + length])
    store.remove(path)


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 8192, 8193, 3 * 8192 + 5, 1 << 20])
@pytest.mark.parametrize("offset", [0, 1, 4095, 4096, 12345])
def test_sizes_around_chunk_and_buffer_borders(
    store: bn.ChunkStore, size: int, offset: int
) -> None:
    data = bytes((i * 7 + offset) % 251 for i in range(size))
    path = f"edge/{size}-{offset}"
    assert store.write(path, offset, data) == size
    got = store.read(path, offset, size)
    assert got == data
    if size:
        assert store.read(path, 0, offset) == bytes(offset)


def test_any_contiguous_buffer_is_accepted(store: bn.ChunkStore) -> None:
    import array

    store.write("buf/a", 0, bytearray(b"abc"))
    store.write("buf/a", 3, memoryview(b"xxdefxx")[2:5])
    store.write("buf/a", 6, array.array("I", [0x64636261]))
    assert store.read("buf/a", 0, 100) == b"abcdefabcd"


def test_a_buffer_another_thread_rewrites_is_written_as_it_was_at_the_call(
    store: bn.ChunkStore,
) -> None:
    import threading

    # Another thread rewrites the whole buffer, one byte value at a time, while the
    # writes run with the GIL released: each write stores one whole value, never a
    # mix (the engine copies a mutable buffer before it lets go of the GIL).
    size = 8 << 20
    data = bytearray(size)
    stop = threading.Event()

    def rewrite() -> None:
        value = 0
        while not stop.is_set():
            value = (value + 1) % 256
            data[:] = bytes([value]) * size

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for round_ in range(8):
            store.write(f"torn/{round_}", 0, data)
    finally:
        stop.set()
        writer.join()
    for round_ in range(8):
        written = store.read(f"torn/{round_}", 0, size)
        assert len(written) == size and written.count(written[:1]) == size, round_


def test_list_stat_truncate_remove(store: bn.ChunkStore) -> None:
    store.write("ls/one", 0, b"1")
    store.write("ls/two", 10, b"2")
    names = store.list()
    assert {"ls/one", "ls/two"} <= set(names)
    assert names == sorted(names)
    store.truncate("ls/two", 3)
    assert store.stat("ls/two")["size"] == 3
    assert store.read("ls/two", 0, 10) == b"\0\0\0"
    store.fsync("ls/two")
    store.remove("ls/one")
    store.remove("ls/two")
    assert "ls/one" not in store.list()


def test_reopen_after_close(tmp_path: Path) -> None:
    data = bytes(range(256)) * 100
    with bn.ChunkStore(str(tmp_path), chunk_size=CHUNK) as s:
        s.write("persist/me", 5000, data)
    with pytest.raises(ValueError, match="closed"):
        s.read("persist/me", 0, 1)
    s2 = bn.ChunkStore(str(tmp_path), chunk_size=CHUNK)
    assert s2.root == str(tmp_path)
    assert s2.chunk_size == CHUNK
    assert s2.read("persist/me", 5000, len(data)) == data
    assert s2.list() == ["persist/me"]
    # One flat backing file per logical file, no directories.
    assert [p.name for p in tmp_path.iterdir()] == ["persist%2Fme"]
    s2.close()
    s2.close()


def test_stats_keys_match_the_stub(tmp_path: Path) -> None:
    with bn.ChunkStore(str(tmp_path), pool_buffers=4) as s:
        s.write("x", 0, bytes(4096))
        st_ = s.stats()
        assert set(st_) == set(bn.StoreStats.__annotations__)
        assert st_["pool_buffers"] == 4
        assert st_["pool_free"] == 4
        assert st_["completed_ops"] >= 1
        assert st_["direct_ops"] + st_["buffered_ops"] == 1
        assert st_["in_flight"] == 0
