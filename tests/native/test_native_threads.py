"""The GIL is released during I/O: threads overlap and see each other's data."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import benchfs_native as bn

HANG_GUARD_S = 60.0  # only a guard against a hang


def test_threads_do_io_concurrently(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    with bn.ChunkStore(str(tmp_path), chunk_size=1 << 16, buffer_size=1 << 16, pool_buffers=4) as s:

        def worker(t: int) -> None:
            try:
                for k in range(20):
                    data = bytes([t, k]) * 40_000
                    s.write(f"t{t}/{k}", k * 1000, data)
                    assert s.read(f"t{t}/{k}", k * 1000, len(data)) == data
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        assert not errors, errors
        assert len(s.list()) == 80


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.timeout(120)
def test_a_caller_waits_for_the_buffer_another_holds(tmp_path: Path) -> None:
    # One buffer, held by a read from a FIFO that completes only once this thread writes into
    # it: a write meanwhile has to wait for that buffer (backpressure, no error).
    root = tmp_path / "store"
    with bn.ChunkStore(str(root), pool_buffers=1) as s:
        os.mkfifo(root / "pipe")
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(s.read("pipe", 0, 5)))
        reader.start()
        fd = os.open(root / "pipe", os.O_WRONLY)  # returns once the engine opened it
        _wait_for(lambda: s.stats()["pool_free"] == 0, "the read to hold the only buffer")
        wrote: list[int] = []
        writer = threading.Thread(target=lambda: wrote.append(s.write("f", 0, b"x" * 4096)))
        writer.start()
        _wait_for(lambda: s.stats()["pool_waits"] > 0, "the write to wait for a buffer")
        assert not wrote
        os.write(fd, b"hello")
        os.close(fd)
        reader.join(timeout=HANG_GUARD_S)
        writer.join(timeout=HANG_GUARD_S)
        assert (got, wrote) == ([b"hello"], [4096])
        assert s.read("f", 0, 4096) == b"x" * 4096


@pytest.mark.timeout(60)
def test_gil_is_released_while_a_call_waits(tmp_path: Path) -> None:
    # A read from a FIFO completes only once this thread writes into it.
    # Were the GIL held during the reader's call, this thread could not run
    # and the test would hang (and time out) instead of passing.
    root = tmp_path / "store"
    with bn.ChunkStore(str(root)) as s:
        os.mkfifo(root / "pipe")
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(s.read("pipe", 0, 5)))
        reader.start()
        fd = os.open(root / "pipe", os.O_WRONLY)  # returns once the engine opened it
        os.write(fd, b"hello")
        os.close(fd)
        reader.join(timeout=30)
    assert got == [b"hello"]
