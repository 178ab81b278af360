"""Directories only this user can use: runs share nodes with other users.

Everything a run creates (results, scratch, registry, data, shared memory)
lives in directories made mode 0700, and the programs of a run work under
umask 077, so what they write inside is private too. A directory that
exists already and belongs to another user who could have claimed it (it
is in a world-writable directory such as /tmp, or is world-writable itself)
is refused: its owner could read or replace what BenchFS writes there. A
group's project directory, owned by one member and not open to everyone,
is trusted as its group trusts it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from benchfs.errors import BenchfsError

PRIVATE_MODE = 0o700
PRIVATE_UMASK = 0o077


def private_umask() -> None:
    """Files and directories this process (and what it starts) creates: owner only."""
    os.umask(PRIVATE_UMASK)


def user_temp_root() -> Path:
    """This user's directory in the temporary directory: ``$TMPDIR/benchfs-<uid>``."""
    return Path(tempfile.gettempdir()) / f"benchfs-{os.geteuid()}"


def check_owned(path: Path) -> None:
    """``path`` is a directory (not a link), this user's or root's, or another
    user's that nobody else could have claimed; else a BenchfsError."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise BenchfsError(f"{path}: {error.strerror or error}") from error
    if stat.S_ISLNK(info.st_mode):
        raise BenchfsError(f"{path}: is a symbolic link: refusing to use it")
    if not stat.S_ISDIR(info.st_mode):
        raise BenchfsError(f"{path}: is not a directory")
    if info.st_uid not in (os.geteuid(), 0) and _claimable(path, info):
        raise BenchfsError(
            f"{path}: owned by uid {info.st_uid}, not by you (uid {os.geteuid()}): "
            "refusing to use it (its owner could read or replace what BenchFS writes there)"
        )


def _claimable(path: Path, info: os.stat_result) -> bool:
    """Whether anyone could have made ``path``: it or its parent is world-writable."""
    if info.st_mode & stat.S_IWOTH:
        return True
    try:
        parent = os.stat(Path(path).absolute().parent)
    except OSError:
        return True
    return bool(parent.st_mode & stat.S_IWOTH)


def make_private_dir(path: Path, *, exist_ok: bool = True) -> Path:
    """Create ``path`` and its missing parents mode 0700; ``path`` and its
    parent must be directories owned by this user (or root), and this user's
    temporary directory too when ``path`` is inside it. ``exist_ok=False``
    makes the creation the claim: FileExistsError when it is there."""
    path = Path(path)
    root = user_temp_root()
    if path != root and path.is_relative_to(root):
        make_user_root(root)
    missing = [p for p in (*reversed(path.parents), path) if not os.path.lexists(p)]
    if missing and missing[0].absolute().parent != missing[0].absolute():
        check_owned(missing[0].absolute().parent)  # before creating anything in it
    for directory in missing:
        try:
            os.mkdir(directory, PRIVATE_MODE)
        except FileExistsError:
            if directory == path and not exist_ok:
                raise
            continue
        except OSError as error:
            raise BenchfsError(f"{directory}: cannot create: {error.strerror or error}") from error
        os.chmod(directory, PRIVATE_MODE)  # mkdir's mode is masked by the umask
    if path not in missing and not exist_ok:
        raise FileExistsError(17, "File exists", str(path))
    check_owned(path)
    if path.absolute().parent != path.absolute():
        check_owned(path.absolute().parent)
    return path


def make_user_root(path: Path) -> Path:
    """A per-user directory at a well-known name (``user_temp_root``): created
    0700, or an existing one that is exactly this user's and made 0700."""
    make_private_dir(path)
    if os.lstat(path).st_uid != os.geteuid():
        raise BenchfsError(
            f"{path}: owned by uid {os.lstat(path).st_uid}, not by you (uid {os.geteuid()}): "
            "refusing to use it"
        )
    os.chmod(path, PRIVATE_MODE)
    return path
