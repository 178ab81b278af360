"""Waiting with a deadline, and an error that says what was awaited.

Control-path only (daemon registration, phase completion): the check is
polled at a short interval. The data path never waits on a timer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from benchfs.cluster.processes import ManagedProcess, describe_status
from benchfs.errors import BenchfsError, LaunchError


def wait_until(
    pending: Callable[[], str | None],
    *,
    deadline_s: float,
    what: str,
    watch: Sequence[ManagedProcess] = (),
    interval_s: float = 0.05,
    error: type[BenchfsError] = LaunchError,
) -> None:
    """Poll ``pending`` until it returns None (done).

    While not done, ``pending`` returns what is still missing (e.g.
    ``"missing n3, n7"``); on the deadline the error reads ``timed out after
    60 s waiting for <what>: <missing>``. A process in ``watch`` that exits
    meanwhile, or whose output says it cannot finish (``stuck_when``), ends
    the wait at once with an error naming it: a dead daemon is reported now,
    not at the deadline.
    """
    deadline = time.monotonic() + deadline_s
    while True:
        missing = pending()
        if missing is None:
            return
        for process in watch:
            code = process.returncode
            if code is not None:
                raise LaunchError(
                    f"{process.describe()} {describe_status(code)} while waiting for {what}"
                    f" ({missing})"
                )
            stuck = process.stuck()
            if stuck is not None:
                raise LaunchError(
                    f"{process.describe()} cannot finish, while waiting for {what} ({missing}):"
                    f" {stuck}"
                )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise error(f"timed out after {deadline_s:g} s waiting for {what}: {missing}")
        time.sleep(min(interval_s, remaining))
