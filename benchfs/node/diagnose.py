"""``python -m benchfs.node.diagnose``: measure one node's storage, print the JSON.

Started on every node at once by ``benchfs diagnose --nodes`` and by the
preflight of ``benchfs run`` (``benchfs.health.fanout``), with the argv of
``benchfs.launchers.programs.diagnose_argv``. It runs the diagnose plan (or,
with ``--preflight``, the workload's pattern) in ``--dir`` and prints a
``benchfs-diagnose`` document of this one node on stdout; the coordinator
assesses all nodes together. The exit code is the node's (0 healthy, 1
degraded, 2 could not run). SIGTERM, SIGINT and SIGHUP leave through the
cleanup code, so no scratch files stay behind; ``--scratch`` names the
scratch directory (a run's preflight names it after the run, so that
``benchfs clean`` finds it should the worker be killed outright).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from benchfs.health.diagnose import diagnose_local
from benchfs.health.preflight import PreflightPattern
from benchfs.health.report import to_json
from benchfs.health.thresholds import Thresholds
from benchfs.node import run_program


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchfs.node.diagnose", description=__doc__)
    parser.add_argument("--dir", type=Path, required=True, help="the directory to measure")
    parser.add_argument("--node-name", required=True, help="the name to report this node as")
    parser.add_argument("--quick", action="store_true", help="short runs")
    parser.add_argument("--preflight", action="store_true", help="the preflight pattern instead")
    parser.add_argument(
        "--transfer-size", type=int, default=1 << 20, help="preflight bytes per I/O"
    )
    parser.add_argument("--files", type=int, default=8, help="preflight file count")
    parser.add_argument("--file-size", type=int, default=16 << 20, help="preflight bytes per file")
    parser.add_argument("--runtime", type=float, default=3.0, help="preflight seconds per phase")
    parser.add_argument(
        "--scratch", default=None, help="the test files' directory in --dir (default: by pid)"
    )
    return parser


# Each leaves through the cleanup code: SIGTERM (the coordinator's deadline,
# a launcher passing on a stop), SIGINT (Ctrl-C where it runs in the
# foreground), SIGHUP (the launcher's connection to the host gone).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_on_signal)

    def body() -> int:
        plan = None
        if args.preflight:
            pattern = PreflightPattern(
                transfer_size=args.transfer_size,
                files=args.files,
                file_size=args.file_size,
                runtime_s=args.runtime,
            )
            plan = pattern.plan()
        report = diagnose_local(
            args.dir,
            quick=args.quick,
            thresholds=Thresholds(),
            node_name=args.node_name,
            plan=plan,
            scratch=args.scratch,
        )
        print(to_json(report), flush=True)
        return report.exit_code

    return run_program(body)


if __name__ == "__main__":
    sys.exit(main())
