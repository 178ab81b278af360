"""Another user on the same machine, for real: a directory both users can
reach (in /var/tmp, as on a shared node), and commands run as uid 65534
through ``setpriv``, which plant what a hostile neighbour would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

OTHER_UID = 65534
SHARED_TMP = Path("/var/tmp")


@dataclass
class Neighbour:
    """``root``: a directory both users reach; ``sticky``: a world-writable one
    with the sticky bit (as /tmp); ``open``: a world-writable one without it;
    ``victim``: a directory of this user's that links are aimed at."""

    root: Path
    sticky: Path
    open: Path
    victim: Path

    def run(self, *argv: str) -> None:
        """``argv`` as the other user; it must succeed."""
        done = subprocess.run(
            [_setpriv(), f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr

    def plant_link(self, link: Path, target: Path) -> Path:
        """A symbolic link the other user makes at ``link``."""
        self.run("ln", "-s", str(target), str(link))
        assert os.lstat(link).st_uid == OTHER_UID
        return link

    def plant_dir(self, path: Path, mode: str = "777") -> Path:
        """A directory the other user makes (and leaves open to everyone)."""
        self.run("mkdir", "-m", mode, str(path))
        assert os.lstat(path).st_uid == OTHER_UID
        return path

    def victim_files(self) -> list[str]:
        return sorted(str(p.relative_to(self.victim)) for p in self.victim.rglob("*"))


def _setpriv() -> str:
    found = shutil.which("setpriv")
    assert found is not None, "setpriv (util-linux) is part of the base system"
    return found


@pytest.fixture
def neighbour() -> Iterator[Neighbour]:
    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root")
    root = Path(tempfile.mkdtemp(prefix="benchfs-test-neighbour-", dir=SHARED_TMP))
    try:
        root.chmod(0o755)
        sticky = root / "sticky"
        sticky.mkdir()
        sticky.chmod(0o1777)
        shared = root / "open"
        shared.mkdir()
        shared.chmod(0o777)
        victim = root / "victim"
        victim.mkdir(mode=0o700)
        yield Neighbour(root, sticky, shared, victim)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def benchfs(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m benchfs ARGS`` as this user."""
    return subprocess.run(
        [sys.executable, "-m", "benchfs", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
    )


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command printed on stderr (no traceback)."""
    assert done.returncode != 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]
