"""What a suite rank does to the file system under test, on either target:
the engine's data and metadata phases, directories, listing, attributes.

``EngineTarget`` wraps the engine's ``Client`` (BenchFS); ``PosixTarget``
a directory of any mounted file system (the engine's plain-POSIX phases
``run_posix_phase`` and ``run_posix_metadata_phase``).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class EngineTarget:
    """BenchFS through the engine's client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run_phase(self, **arguments: Any) -> Mapping[str, Any]:
        result: Mapping[str, Any] = self.client.run_phase(**arguments)
        return result

    def run_metadata_phase(self, **arguments: Any) -> Mapping[str, Any]:
        result: Mapping[str, Any] = self.client.run_metadata_phase(**arguments)
        return result

    def make_dir(self, path: str) -> None:
        """A directory the suite's files go in. A namespace without directories
        of its own (an engine without ``mkdir``) makes them by their files."""
        mkdir = getattr(self.client, "mkdir", None)
        if mkdir is not None:
            with contextlib.suppress(FileExistsError):
                mkdir(path)

    def find_level(
        self, directories: list[str], name: str, size: int, newer_than_ns: int
    ) -> tuple[list[str], int, int]:
        """IO500's find over some directories of one level: (the directories
        below them, the other entries scanned, the files whose name matches
        ``name`` as pfind reads ``-name`` (``*`` any run, ``.`` itself, found
        anywhere in the name), of ``size`` bytes, modified after
        ``newer_than_ns``). Only a matching name is stat'ed, as pfind."""
        matches = re.compile(name.replace('"', "").replace(".", "[.]").replace("*", ".*")).search
        below: list[str] = []
        scanned = found = 0
        for directory in directories:
            for e in self.client.readdir(directory):
                if stat.S_ISDIR(e["mode"]):
                    below.append(f"{directory}/{e['name']}")
                    continue
                scanned += 1
                if matches(e["name"]):
                    attr = self.client.stat(f"{directory}/{e['name']}")
                    found += attr["size"] == size and attr["mtime_unix_ns"] > newer_than_ns
        return below, scanned, found

    def attributes(self, path: str) -> tuple[int, int]:
        """(size, mtime in ns) of a file."""
        attr = self.client.stat(path)
        return int(attr["size"]), int(attr["mtime_unix_ns"])

    def touch(self, path: str) -> None:
        self.client.close(self.client.create(path))

    def sync(self) -> None:
        """mdtest's ``-Y``: flush what this node holds. The engine's client
        keeps no written data (every write is answered by its daemon), so
        there is nothing to flush."""

    def unlink(self, path: str) -> None:
        self.client.unlink(path)

    def disconnect(self) -> None:
        self.client.disconnect()


class PosixTarget:
    """The client's phases, directories and unlink on a directory of any
    mounted file system; ``own_directory``: the run made it, so it is removed
    after the run."""

    def __init__(self, directory: Path, direct: bool, own_directory: bool = True) -> None:
        self.directory = directory
        self.direct = direct
        self.own_directory = own_directory

    def run_phase(self, **arguments: Any) -> Mapping[str, Any]:
        import benchfs_native

        result: Mapping[str, Any] = benchfs_native.run_posix_phase(
            directory=str(self.directory), direct=self.direct, **arguments
        )
        return result

    def run_metadata_phase(self, **arguments: Any) -> Mapping[str, Any]:
        import benchfs_native

        result: Mapping[str, Any] = benchfs_native.run_posix_metadata_phase(
            directory=str(self.directory), **arguments
        )
        return result

    def make_dir(self, path: str) -> None:
        (self.directory / path).mkdir(mode=0o700, exist_ok=True)

    def find_level(
        self, directories: list[str], name: str, size: int, newer_than_ns: int
    ) -> tuple[list[str], int, int]:
        """``EngineTarget.find_level`` in the engine's loop, as pfind scans: the
        entry's type from the listing, every name matched with pfind's regular
        expression (the C library's), only a matching name ``lstat``'ed."""
        import benchfs_native

        return benchfs_native.find_posix_level(
            directory=str(self.directory), directories=directories, name=name,
            size=size, newer_than_ns=newer_than_ns,
        )  # fmt: skip

    def attributes(self, path: str) -> tuple[int, int]:
        found = os.lstat(self.directory / path)
        return found.st_size, found.st_mtime_ns

    def touch(self, path: str) -> None:
        os.close(os.open(self.directory / path, os.O_CREAT | os.O_WRONLY, 0o600))

    def sync(self) -> None:
        """mdtest's ``-Y`` on POSIX: the ``sync`` command's sync(2), every
        file system of this host."""
        os.sync()

    def unlink(self, path: str) -> None:
        (self.directory / path).unlink(missing_ok=True)

    def disconnect(self) -> None:
        """Nothing to end: no sessions."""
