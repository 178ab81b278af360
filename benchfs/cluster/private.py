"""Directories only this user can use: runs share nodes with other users.

Everything a run creates (results, scratch, registry, data, shared memory)
lives in directories made mode 0700, and the programs of a run work under
umask 077, so what they write inside is private too. A directory that
exists already and belongs to another user who could have claimed it (it
is in a world-writable directory such as /tmp, or is world-writable itself)
is refused: its owner could read or replace what BenchFS writes there. A
group's project directory, owned by one member and not open to everyone,
is trusted as its group trusts it.

The path to such a directory is walked component by component
(``check_path``) before anything is created or used there: a symbolic link
is followed only when another user could neither have made it nor replaced
it (it is this user's or root's, in a directory no other user may rename
it in), and no component sits in a world-writable directory without the
sticky bit, where anyone could swap it for their own.
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


# As the kernel's (ELOOP): a chain of links longer than this is refused.
MAX_LINKS = 40


def check_path(path: Path) -> None:
    """Every component of ``path`` that exists, walked as the kernel resolves
    it: a BenchfsError naming the component when another user could have
    put it there or could replace it (a symbolic link of another user's, or
    one in a directory others may write without the sticky bit; any entry
    in a world-writable directory without the sticky bit)."""
    pending = list(Path(os.path.abspath(path)).parts[1:])
    current = Path("/")
    links = 0
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            current = current.parent
            continue
        candidate = current / name
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            return  # the rest is created by this user, under the checks of make_private_dir
        except OSError as error:
            raise BenchfsError(f"{candidate}: {error.strerror or error}") from error
        _check_replaceable(candidate, info, current)
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise BenchfsError(f"{path}: more than {MAX_LINKS} symbolic links")
            target = os.readlink(candidate)
            pending = [*Path(target).parts, *pending]
            if os.path.isabs(target):
                current = Path("/")
                pending = pending[1:]
            continue
        current = candidate


def _check_replaceable(entry: Path, info: os.stat_result, parent: Path) -> None:
    mine = info.st_uid in (os.geteuid(), 0)
    link = stat.S_ISLNK(info.st_mode)
    if link and not mine:
        raise BenchfsError(
            f"{entry}: a symbolic link owned by uid {info.st_uid}, not by you "
            f"(uid {os.geteuid()}): refusing to follow it"
        )
    try:
        where = os.stat(parent)
    except OSError as error:
        raise BenchfsError(f"{parent}: {error.strerror or error}") from error
    if not where.st_mode & stat.S_IWOTH:
        return
    if not where.st_mode & stat.S_ISVTX:
        what = "a symbolic link" if link else "it"
        raise BenchfsError(
            f"{entry}: {parent} is writable by every user (without the sticky bit): "
            f"anyone could replace {what}: refusing to use it"
        )
    if not mine:  # in a sticky directory such as /tmp: its owner alone could replace it
        raise BenchfsError(
            f"{entry}: owned by uid {info.st_uid}, not by you (uid {os.geteuid()}): "
            "refusing to use it (its owner could read or replace what BenchFS writes there)"
        )


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
    check_path(path)
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
    check_path(path)
    check_owned(path)
    if path.absolute().parent != path.absolute():
        check_owned(path.absolute().parent)
    return path


def check_private_dir(path: Path) -> Path:
    """An existing directory BenchFS reads its job's secrets from (a registry):
    the same checks as ``make_private_dir``, nothing created."""
    check_path(path)
    check_owned(path)
    if Path(path).absolute().parent != Path(path).absolute():
        check_owned(Path(path).absolute().parent)
    return Path(path)


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
