"""Node programs: what runs on the nodes on behalf of the orchestrator.

Each is a module run as ``python -m benchfs.node.<program>`` with the argv
that ``benchfs.launchers.programs`` builds (the one place that knows them);
nothing imports them, and they import no CLI, so they start fast:

- ``daemon``: one daemon of a run (``benchfs.daemon`` serves it);
- ``rank``: one workload rank under MPI (``benchfs.workload``);
- ``mount``: one node's FUSE mount of a run's cluster (``benchfs.mount``);
- ``diagnose``: the diagnose or preflight measurement of one node, as JSON
  on stdout (``benchfs.health``);
- ``host``: the per-host helper that stops a run's daemons and removes its
  files on hosts the orchestrator reaches only through the launcher;
- ``workdir``: a tool's directory on the mount: a rank of the tool's job
  started in its node's mount point, and the directory made, stamped,
  scanned and removed through one host's mount.

Every program says what went wrong in one line on stderr and exits non-zero.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from benchfs.cluster.private import private_umask
from benchfs.errors import BenchfsError


def run_program(body: Callable[[], int], prefix: str = "error: ") -> int:
    """Run a node program's ``body``; an expected error becomes one line on
    stderr (``prefix`` and the message) and a non-zero exit code. What the
    program creates is this user's only (umask 077)."""
    private_umask()
    try:
        return body()
    except (BenchfsError, OSError, ValueError, RuntimeError) as error:
        print(f"{prefix}{error}", file=sys.stderr, flush=True)
        return error.exit_code if isinstance(error, BenchfsError) else 2
