"""Shared pytest fixtures, and a loud line for every skipped core-claim test."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator

import pytest

# The helpers' own asserts say what they found when they fail, as a test's do.
pytest.register_assert_rewrite(
    "analysis_support", "daemon_cluster", "hostile_support", "mount_support",
    "outsider_support", "run_helpers", "signal_helpers", "table_checks",
    "tool_outputs_support",
)  # fmt: skip

CORE_CLAIM = "core_claim"


def is_root() -> bool:
    return os.geteuid() == 0


requires_root = pytest.mark.skipif(not is_root(), reason="needs root (loop devices, cgroups)")


@pytest.fixture(autouse=True)
def _umask_restored() -> Iterator[None]:
    """A command run in this process (``benchfs diagnose`` through typer's
    runner) sets its private umask for good, as it does in its own process;
    the tests after it create files with the modes they ask for."""
    umask = os.umask(0o022)
    os.umask(umask)
    yield
    os.umask(umask)


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


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


# Where the tools were built for this run (`make test HPC_TOOLS_SRC=DIR`, CI),
# a test skipping because IOR, mdtest or io500 is missing is a broken set-up,
# not a machine without them: it fails, with the skip's own reason.
REQUIRE_TOOLS = "BENCHFS_TESTS_REQUIRE_TOOLS"
_TOOL_MISSING = re.compile(r"\b(ior|mdtest|io500)\b.*\bnot found\b", re.IGNORECASE)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and os.environ.get(REQUIRE_TOOLS) == "1":
        reason = _skip_reason(report)
        if _TOOL_MISSING.search(reason):
            report.outcome = "failed"
            report.longrepr = f"{REQUIRE_TOOLS}=1 (the tools were built for this run): {reason}"


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
        reason = _skip_reason(report)
        terminalreporter.write_line(f"SKIPPED core claim {report.nodeid}: {reason}", red=True)
