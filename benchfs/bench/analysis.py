"""Speed of the analysis: load 10 million trace events and write the full report.

Events are generated in the engine's trace format (vectorised numpy) into a
temporary results directory; loading and reporting then run in a fresh
Python process, so that its peak RSS (``ru_maxrss``) counts only the
analysis and not the generator. That process times every step the loader
and the report mark (``analysis.timing``): wall and CPU seconds each.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis.synthetic import generate_run_traces, write_run_dir
from analysis.timing import StepTime, record_steps, step
from benchfs.bench.scope import bench_scope

DEFAULT_EVENTS = 10_000_000
TARGET_SECONDS = 5.0
TARGET_PEAK_BYTES = 1024**3
# The report's time outside every marked step (headline, phase tables, the manifest).
OTHER_STEP = "other"


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
    # Wall and CPU seconds per step ("load", "load.traces", "statistics.latency", ...),
    # in the order they ran; a group whose parts alone are marked ("plots") sums them.
    steps: dict[str, StepTime] = field(default_factory=dict)
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
            steps={name: StepTime(**times) for name, times in measured["steps"].items()},
        )


def _source_root_path() -> str:
    """Make the child import the same packages as this process, installed or not."""
    here = str(Path(__file__).resolve().parents[2])
    existing = os.environ.get("PYTHONPATH")
    return f"{here}{os.pathsep}{existing}" if existing else here


def _measure(run_dir: Path) -> dict[str, object]:
    from analysis.loaders.run import load_run
    from analysis.reports.write import write_run_report

    with record_steps() as times:
        with step("load"):
            run = load_run(run_dir)
        report_wall, report_cpu = time.perf_counter(), time.process_time()
        write_run_report(run, run_dir)
        report_wall, report_cpu = (
            time.perf_counter() - report_wall,
            time.process_time() - report_cpu,
        )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    steps = with_group_totals(times.steps)
    marked = [times for name, times in steps.items() if "." not in name and name != "load"]
    steps[OTHER_STEP] = StepTime(
        max(0.0, report_wall - sum(times.wall_s for times in marked)),
        max(0.0, report_cpu - sum(times.cpu_s for times in marked)),
    )
    return {
        "load_s": steps["load"].wall_s,
        "report_s": report_wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_bytes": usage.ru_maxrss * 1024,  # ru_maxrss is in KiB on Linux
        "steps": {name: asdict(times) for name, times in steps.items()},
    }


def with_group_totals(steps: dict[str, StepTime]) -> dict[str, StepTime]:
    """``steps`` with a total before the first part of each group that has none
    (``plots`` before ``plots.latency_cdf``), so every level adds up."""
    out: dict[str, StepTime] = {}
    for name, times in steps.items():
        parts = name.split(".")
        for depth in range(1, len(parts)):
            group = ".".join(parts[:depth])
            if group not in steps and group not in out:
                members = [t for n, t in steps.items() if n.startswith(f"{group}.")
                           and n.count(".") == depth]  # fmt: skip
                out[group] = StepTime(sum(t.wall_s for t in members),
                                      sum(t.cpu_s for t in members))  # fmt: skip
        out[name] = times
    return out


if __name__ == "__main__":
    print(json.dumps(_measure(Path(sys.argv[1]))))
