"""A SIGTERM whose ``Terminated`` some code turned into an error of its own
(a pybind11 module's import reports any failure as ``ImportError:
initialization failed``, and report writing carries on past it) still stops
the command: the scope that caught it ends with ``Terminated``, and no new
scope or tool starts meanwhile."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from proc_helpers import alive

from benchfs.cluster.lifecycle import Lifecycle, Terminated, stop_requested
from benchfs.tools.process import run_tool


def _swallowed(signum: int) -> None:
    """Deliver ``signum`` to this process inside code that turns every exception
    into an ImportError, and a caller that carries on past that."""
    try:
        try:
            signal.raise_signal(signum)
            time.sleep(30)  # the handler raises before this sleep ends
        except BaseException as error:
            raise ImportError("initialization failed") from error
    except ImportError:
        pass


def test_a_swallowed_stop_still_ends_its_scope_with_terminated() -> None:
    with pytest.raises(Terminated) as stopped, Lifecycle(grace_s=5) as life:
        sleeper = life.start(["sleep", "300"], name="sleeper")
        _swallowed(signal.SIGTERM)
        assert stop_requested() == signal.SIGTERM
    assert stopped.value.signum == signal.SIGTERM
    assert not alive(sleeper.pid)
    assert stop_requested() is None  # the request ended with the scope that caught it


def test_nothing_new_starts_once_a_stop_was_asked_for(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    with pytest.raises(Terminated) as stopped, Lifecycle(grace_s=5):
        _swallowed(signal.SIGHUP)
        with pytest.raises(Terminated):
            run_tool(["touch", str(ran)], tool="touch", where=str(tmp_path), timeout_s=30)
        with pytest.raises(Terminated), Lifecycle(grace_s=5):
            pytest.fail("a new scope opened after the stop")
    assert stopped.value.signum == signal.SIGHUP
    assert not ran.exists()


def test_a_scope_without_a_signal_ends_quietly_after_an_inner_one_caught_it() -> None:
    # The inner scope raised its Terminated and the caller handled it: that stop is over.
    with Lifecycle(grace_s=5):
        with pytest.raises(Terminated), Lifecycle(grace_s=5):
            signal.raise_signal(signal.SIGTERM)
            time.sleep(30)
        assert stop_requested() is None
