"""Reading a file a user names (a config, a hostfile, a node file, a results
file): a regular file, of bounded size, as UTF-8 text, nested to a bounded
depth. The one place every such read goes through, in ``analysis`` so that
both packages share it (``benchfs`` may import ``analysis``, not the reverse).

- the file is opened without blocking (``O_NONBLOCK``: a FIFO with no writer
  does not hang the open) and refused at once unless it is a regular file, so
  ``/dev/zero``, ``/dev/urandom``, a FIFO or a directory never gets read;
- its size is checked before anything is read, and no more than the bound
  plus one byte is ever read (a file that grows while it is read is caught);
- bytes that are not UTF-8 name the file and the byte offset;
- ``check_nesting`` refuses text nested deeper than a bound before a
  recursive parser (tomllib, json) would run out of stack.

Every failure is ``error(message)`` of the caller's class: one line that
names the file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

KIB = 1024
MIB = 1024 * KIB
# A config file of any kind: far beyond any real one (the examples are < 4 KiB).
CONFIG_BYTES = 4 * MIB
# A hostfile or a scheduler's node file: a PBS node file repeats a host per
# slot, so 10,000 nodes of 256 slots are about 40 MiB.
HOSTFILE_BYTES = 64 * MIB
# A results file BenchFS wrote itself (a manifest, a summary, a document).
RESULTS_BYTES = 256 * MIB
# Brackets and braces nested deeper than this are no config or result of ours.
MAX_NESTING = 64

Error = Callable[[str], Exception]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_bounded(path: Path, *, limit: int, what: str, error: Error) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes;
    ``what`` names the kind of file in errors (``config``, ``hostfile``)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as failure:
        raise error(f"{path}: cannot read {what}: {failure.strerror or failure}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
            raise error(f"{path}: {kind}, not a regular file: a {what} must be a regular file")
        if info.st_size > limit:
            raise error(_too_big(path, info.st_size, limit, what))
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(descriptor, min(limit + 1 - total, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as failure:
        raise error(f"{path}: cannot read {what}: {failure.strerror or failure}") from None
    finally:
        os.close(descriptor)
    if total > limit:
        raise error(_too_big(path, total, limit, what, growing=True))
    return b"".join(chunks)


def read_bounded_text(path: Path, *, limit: int, what: str, error: Error) -> str:
    """``read_bounded`` decoded as UTF-8; bytes that are not name the offset."""
    data = read_bounded(path, limit=limit, what=what, error=error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as failure:
        raise error(
            f"{path}: not UTF-8 text (byte {failure.start}): a {what} is UTF-8 text"
        ) from None


def load_json_bounded(path: Path, *, limit: int = RESULTS_BYTES, what: str, error: Error) -> Any:
    """A JSON document from ``path`` through ``read_bounded_text`` and ``check_nesting``."""
    text = read_bounded_text(path, limit=limit, what=what, error=error)
    check_nesting(text, str(path), error)
    try:
        return json.loads(text)
    except json.JSONDecodeError as failure:
        raise error(f"{path}: {what} is not valid JSON: {failure}") from None
    except RecursionError:
        raise error(f"{path}: {what} is nested too deeply to parse") from None


def check_nesting(text: str, source: str, error: Error, *, limit: int = MAX_NESTING) -> None:
    """Refuse ``text`` (TOML or JSON) whose ``[``/``{`` nest deeper than ``limit``.

    Quoted strings (``"..."`` with escapes, ``'...'``) and ``#`` comments are
    skipped; the count is what a recursive parser would descend."""
    depth = 0
    line = 1
    quote = ""
    escaped = False
    comment = False
    for char in text:
        if char == "\n":
            line += 1
            comment = False
            if quote == "'":
                quote = ""  # a literal string ends at its line (or is a TOML error anyway)
            continue
        if comment:
            continue
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
            continue
        if char in "\"'":
            quote = char
        elif char == "#":
            comment = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                raise error(
                    f"{source}:{line}: nested more than {limit} levels deep "
                    "(brackets or braces): refusing to parse it"
                )
        elif char in "]}":
            depth = max(depth - 1, 0)


def _too_big(path: Path, size: int, limit: int, what: str, *, growing: bool = False) -> str:
    grew = " (it grew while being read)" if growing else ""
    return (
        f"{path}: {_size(size)}{grew}, more than the {_size(limit)} a {what} may have: "
        "refusing to read it"
    )


def _size(count: int) -> str:
    if count >= MIB:
        return f"{count / MIB:,.1f} MiB ({count:,} bytes)"
    return f"{count:,} bytes"
