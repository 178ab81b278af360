"""A real PostgreSQL server for one test: Debian's ``initdb`` and ``pg_ctl`` in a
directory of its own, listening on a Unix socket there only (no TCP, no system
service), run as a user other than root (the server refuses root), removed after.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

USER = "benchfs"  # the database role the tests connect as (trust, on the socket only)
SERVER_USER = "postgres"  # the Debian package's own account, when the tests run as root


def server_bin() -> Path | None:
    """The newest installed server's bin directory (``/usr/lib/postgresql/N/bin``)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


def postgres_unavailable() -> str | None:
    """Why a server cannot be started here, or None when it can."""
    if server_bin() is None:
        return "Debian's postgresql package is not installed (no /usr/lib/postgresql/*/bin/initdb)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root, and there is no {SERVER_USER!r} user to run the server as"
        if shutil.which("runuser") is None:
            return "running as root, and runuser (util-linux) is missing"
    return None


def _as_server_user(argv: Sequence[str]) -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--", *argv] if os.geteuid() == 0 else list(argv)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield the URL of its database for ``history.url``."""
    bin_dir = server_bin()
    assert bin_dir is not None
    base = Path(tempfile.mkdtemp(prefix=f"benchfs-history-pg-{os.getpid()}-"))
    data, socket_dir, log = base / "data", base / "socket", base / "server.log"
    socket_dir.mkdir()
    if os.geteuid() == 0:
        account = pwd.getpwnam(SERVER_USER)
        for path in (base, socket_dir):
            os.chown(path, account.pw_uid, account.pw_gid)
    try:
        subprocess.run(
            _as_server_user([str(bin_dir / "initdb"), "-D", str(data), "-U", USER,
                             "--auth=trust", "--no-sync", "-E", "UTF8"]),
            check=True, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        options = f"-k {socket_dir} -c listen_addresses='' -c fsync=off"
        subprocess.run(
            _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options,
                             "-l", str(log), "-w", "-t", "120", "start"]),
            check=True, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        try:
            yield f"postgresql://{USER}@/postgres?host={socket_dir}"
        finally:
            subprocess.run(
                _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast",
                                 "-w", "stop"]),
                check=False, capture_output=True, timeout=120,
            )  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)
