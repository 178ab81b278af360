"""The stop signals of a daemon process (``benchfs daemon``, the node
program): blocked before it serves, so none is ever fatal.

The engine's signal guard unblocks them while the daemon serves. A stop
signal that comes during start-up then stops the daemon as soon as it can
drain, and one that comes after it has stopped (a launcher may pass a
signal on more than once) stays pending until the process exits with its
own status, instead of killing it before it has unregistered or said so.
"""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def block_stop_signals() -> None:
    """Blocks the stop signals on the calling thread (the one that serves)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
