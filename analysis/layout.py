"""The results directory of one run: the name of every file and folder in it.

This is the contract between the writers (``benchfs run``, the workload
ranks, the report) and the readers (``analysis.loaders.run``, the
notebooks, ``analysis.synthetic``): both take the names from here, so a
file is never written under one name and looked for under another.

```
<run>/manifest.json                      the run's record (analysis.manifest)
<run>/preflight/<node>.json              a node's preflight: a benchfs-diagnose document
<run>/preflight/<node>.stderr            what that node's worker said on stderr (when anything)
<run>/iostat/<node>.json                 iostat -x -t -o JSON on that node during the workload
<run>/live/samples.jsonl                 every node's figures, once a second while the phases ran
<run>/verdicts.json                      per node and phase: slow or not, where, since when
<run>/workload/summary.json              per phase, IOR's names (benchfs.workload.summary)
<run>/workload/ranks.jsonl               one row per rank, repetition and phase
<run>/workload/connect.jsonl             one row per rank: when it connected to the daemons
<run>/workload/latency-<phase>-<rep>.npy every transfer's latency in ns (u64)
<run>/workload/tool/                     a tool run (workload.tool): what the tool printed
    ior-summary.json, ior.out            IOR's JSON summary file and its stdout
    mdtest.out                           mdtest's stdout (its text output)
    fio-<node>.json                      fio's JSON on each node
    <tool>[-<node>].stderr               what it said on stderr
<run>/traces/*.bftrace                   the engine's event logs
<run>/logs/workload.log                  the launcher job of the workload ranks
<run>/logs/daemons/<name>.log            each daemon (or launcher job of daemons)
<run>/logs/mounts/<name>.log             each node's mount (or launcher job of mounts)
<run>/report.md, report.html, plots/     the report (analysis.reports.write)
```

Readers also accept what other tools leave in the same places: raw fio
JSON under ``preflight/`` and per-rank rows as CSV or JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MANIFEST = "manifest.json"
# The results directory's data version (the manifest's ``data_version``): what
# this reader reads; a directory of another version is refused by name.
DATA_VERSION = 1
PREFLIGHT_DIR = "preflight"
IOSTAT_DIR = "iostat"
TRACES_DIR = "traces"
LOGS_DIR = "logs"
WORKLOAD_DIR = "workload"
PLOTS_DIR = "plots"
LIVE_DIR = "live"
VERDICTS = "verdicts.json"
REPORT_MARKDOWN = "report.md"
REPORT_HTML = "report.html"

# Inside workload/.
SUMMARY_FILE = "summary.json"
RANKS_FILE = "ranks.jsonl"
CONNECT_FILE = "connect.jsonl"
# Per-rank rows other tools may leave instead, in the order they are looked for.
RANK_FILES = ("ranks.csv", RANKS_FILE, "ranks.json")
LATENCY_GLOB = "latency-*-*.npy"
# Inside workload/: what a tool run printed (workload.tool).
TOOL_OUTPUT_DIR = "tool"
IOR_SUMMARY_FILE = "ior-summary.json"
# Inside live/.
LIVE_SAMPLES = "samples.jsonl"
# Inside logs/.
WORKLOAD_LOG = "workload.log"
DAEMON_LOGS_DIR = "daemons"
MOUNT_LOGS_DIR = "mounts"

TRACE_SUFFIX = ".bftrace"
STDERR_SUFFIX = ".stderr"


def latency_file_name(phase: str, repetition: int) -> str:
    """``latency-<phase>-<repetition>.npy``."""
    return f"latency-{phase}-{repetition}.npy"


def parse_latency_file_name(name: str) -> tuple[str, int] | None:
    """(phase, repetition) of a latency file name, None for any other name."""
    stem = name.removesuffix(".npy")
    if stem == name or not stem.startswith("latency-"):
        return None
    phase, _, repetition = stem.removeprefix("latency-").rpartition("-")
    return (phase, int(repetition)) if phase and repetition.isdigit() else None


def tool_output_name(tool: str, node: str | None = None, suffix: str = ".out") -> str:
    """A file of ``workload/tool/``: ``<tool>.out``, ``<tool>-<node>.json``, ..."""
    return f"{tool}-{node}{suffix}" if node else f"{tool}{suffix}"


def node_file_name(node: str) -> str:
    """A per-node file of ``preflight/`` or ``iostat/``: ``<node>.json``."""
    return f"{node}.json"


@dataclass(frozen=True)
class RunLayout:
    """The paths of one results directory."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def preflight_dir(self) -> Path:
        return self.root / PREFLIGHT_DIR

    @property
    def iostat_dir(self) -> Path:
        return self.root / IOSTAT_DIR

    @property
    def traces_dir(self) -> Path:
        return self.root / TRACES_DIR

    @property
    def live_dir(self) -> Path:
        return self.root / LIVE_DIR

    @property
    def live_samples(self) -> Path:
        return self.live_dir / LIVE_SAMPLES

    @property
    def verdicts(self) -> Path:
        return self.root / VERDICTS

    @property
    def logs_dir(self) -> Path:
        return self.root / LOGS_DIR

    @property
    def daemon_logs_dir(self) -> Path:
        return self.logs_dir / DAEMON_LOGS_DIR

    @property
    def mount_logs_dir(self) -> Path:
        return self.logs_dir / MOUNT_LOGS_DIR

    @property
    def workload_log(self) -> Path:
        return self.logs_dir / WORKLOAD_LOG

    @property
    def workload_dir(self) -> Path:
        return self.root / WORKLOAD_DIR

    @property
    def summary(self) -> Path:
        return self.workload_dir / SUMMARY_FILE

    @property
    def ranks(self) -> Path:
        return self.workload_dir / RANKS_FILE

    @property
    def connects(self) -> Path:
        return self.workload_dir / CONNECT_FILE

    @property
    def tool_output_dir(self) -> Path:
        return self.workload_dir / TOOL_OUTPUT_DIR

    @property
    def ior_summary(self) -> Path:
        return self.tool_output_dir / IOR_SUMMARY_FILE

    def tool_stdout(self, tool: str, node: str | None = None) -> Path:
        """What ``tool`` printed (on ``node``); fio's is its JSON report."""
        suffix = ".json" if tool == "fio" else ".out"
        return self.tool_output_dir / tool_output_name(tool, node, suffix)

    def tool_stderr(self, tool: str, node: str | None = None) -> Path:
        return self.tool_output_dir / tool_output_name(tool, node, STDERR_SUFFIX)

    def latency(self, phase: str, repetition: int) -> Path:
        return self.workload_dir / latency_file_name(phase, repetition)

    def preflight_file(self, node: str) -> Path:
        return self.preflight_dir / node_file_name(node)

    def preflight_stderr(self, node: str) -> Path:
        return self.preflight_dir / f"{node}{STDERR_SUFFIX}"

    def iostat_file(self, node: str) -> Path:
        return self.iostat_dir / node_file_name(node)

    @property
    def report_markdown(self) -> Path:
        return self.root / REPORT_MARKDOWN

    @property
    def report_html(self) -> Path:
        return self.root / REPORT_HTML

    @property
    def plots_dir(self) -> Path:
        return self.root / PLOTS_DIR

    def report_files(self) -> list[Path]:
        """What the report writes: not results, but made from them."""
        return [self.report_markdown, self.report_html, self.plots_dir]
