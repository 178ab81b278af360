"""Shared pytest fixtures, and a loud line for every skipped core-claim test."""

from __future__ import annotations

import os
import signal

import pytest

CORE_CLAIM = "core_claim"


def is_root() -> bool:
    return os.geteuid() == 0


requires_root = pytest.mark.skipif(not is_root(), reason="needs root (loop devices, cgroups)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CORE_CLAIM}: checks a core claim (a slow node found and excluded, a dead daemon"
        " named, data verified); a skip is listed at the end of the run",
    )
    # A test run started in the background inherits SIGINT ignored, and a
    # child keeps an ignored signal across exec: the tests that interrupt a
    # child would wait for nothing. A handled signal is reset to the default
    # in every child, as when the run starts from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if CORE_CLAIM in report.keywords
    ]
    if not skipped:
        return
    terminalreporter.write_sep(
        "!", f"{len(skipped)} core-claim test(s) SKIPPED: these claims were NOT checked", red=True
    )
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        terminalreporter.write_line(f"SKIPPED core claim {report.nodeid}: {reason}", red=True)
