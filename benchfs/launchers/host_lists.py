"""Host lists too long for one argument go in a file.

Linux takes at most MAX_ARG_STRLEN (131,072 bytes) in one argument, and a
list of 10,000 hosts by name (``-H node00001:48,...``) is about that long;
the exec would fail with "Argument list too long". A list longer than
``HOST_ARGUMENT_BYTES`` is written to a file instead, and the launcher names
the file (Open MPI's ``--hostfile``, Hydra's ``-f``, srun's ``-w PATH``).

The file is named by its content, so the same list is written once however
many commands use it, and lies in a directory only this user can use: the
run's scratch directory (removed with it), else this user's temporary
directory. Only the launching machine reads it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from benchfs.cluster.private import make_private_dir, user_temp_root

# Half of MAX_ARG_STRLEN: room for the rest of the command's arguments.
HOST_ARGUMENT_BYTES = 64 * 1024


def fits_one_argument(text: str) -> bool:
    """Whether ``text`` may go on a command line as one argument."""
    return len(text.encode()) <= HOST_ARGUMENT_BYTES


def host_list_file(text: str, directory: Path | None = None) -> Path:
    """A file holding ``text`` in ``directory`` (None: ``<user temp>/host-lists``),
    named by its content; written whole (a temporary file renamed) unless it is
    there already."""
    directory = make_private_dir(directory or user_temp_root() / "host-lists")
    path = directory / f"hosts-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if path.exists():
        return path
    descriptor, temp_name = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return path
