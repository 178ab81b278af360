"""Speed of the analysis: load 10 million trace events and write the full report.

Events are generated in the engine's trace format (vectorised numpy) into a
temporary results directory; loading and reporting then run in a fresh
Python process, so that its peak RSS (``ru_maxrss``) counts only the
analysis and not the generator.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from analysis.synthetic import generate_run_traces, write_run_dir
from benchfs.bench.scope import bench_scope

DEFAULT_EVENTS = 10_000_000
TARGET_SECONDS = 10.0
TARGET_PEAK_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class AnalysisBenchResult:
    events: int
    nodes: int
    trace_bytes: int
    generate_s: float
    load_s: float
    report_s: float
    total_s: float
    cpu_s: float  # user + system CPU of the measuring process: less sensitive to other load
    peak_rss_bytes: int
    target_s: float = TARGET_SECONDS
    target_peak_bytes: int = TARGET_PEAK_BYTES

    @property
    def within_targets(self) -> bool:
        return self.total_s <= self.target_s and self.peak_rss_bytes <= self.target_peak_bytes

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "within_targets": self.within_targets}


def run_analysis_bench(
    events: int = DEFAULT_EVENTS, *, nodes: int = 16, workdir: Path | None = None
) -> AnalysisBenchResult:
    """Generate ``events`` events, then time load + report in a child process."""
    with bench_scope(workdir, "benchfs-analysis-bench-") as (_, root):
        started = time.perf_counter()
        paths = generate_run_traces(root / "traces", events, nodes=nodes)
        generate_s = time.perf_counter() - started
        write_run_dir(root, manifest={"label": "analysis-bench", "events": events})
        # Flush the fresh traces first: their write-back would otherwise compete
        # with the measurement, unlike the traces of a finished run.
        os.sync()
        child = subprocess.run(
            [sys.executable, "-m", "benchfs.bench.analysis", str(root)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": _source_root_path()},
        )
        measured = json.loads(child.stdout.strip().splitlines()[-1])
        return AnalysisBenchResult(
            events=events,
            nodes=nodes,
            trace_bytes=sum(path.stat().st_size for path in paths),
            generate_s=generate_s,
            load_s=measured["load_s"],
            report_s=measured["report_s"],
            total_s=measured["load_s"] + measured["report_s"],
            cpu_s=measured["cpu_s"],
            peak_rss_bytes=measured["peak_rss_bytes"],
        )


def _source_root_path() -> str:
    """Make the child import the same packages as this process, installed or not."""
    here = str(Path(__file__).resolve().parents[2])
    existing = os.environ.get("PYTHONPATH")
    return f"{here}{os.pathsep}{existing}" if existing else here


def _measure(run_dir: Path) -> dict[str, float | int]:
    from analysis.loaders.run import load_run
    from analysis.reports.write import write_run_report

    started = time.perf_counter()
    run = load_run(run_dir)
    loaded = time.perf_counter()
    write_run_report(run, run_dir)
    done = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "load_s": loaded - started,
        "report_s": done - loaded,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_bytes": usage.ru_maxrss * 1024,  # ru_maxrss is in KiB on Linux
    }


if __name__ == "__main__":
    print(json.dumps(_measure(Path(sys.argv[1]))))
