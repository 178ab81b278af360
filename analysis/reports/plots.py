"""PNG plots readable without the text: titles, axis labels with units, legends.

Figures are built with matplotlib's object API (no pyplot, no global
state, no display); saving a PNG renders through Agg.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from analysis.stats._common import NS_PER_MS, group_positions

DPI = 110
# The CDF is drawn from these quantiles of each node, not from every op.
_CDF_QUANTILES = np.concatenate([np.linspace(0, 99, 199), np.linspace(99, 100, 51)[1:]])
_SLOW_COLOURS = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]


def latency_cdf(
    ops: pd.DataFrame, path: Path, *, highlight: Iterable[str] = (), title_op: str = ""
) -> Path:
    """CDF of storage-op latency, one line per node; flagged nodes in colour."""
    flagged = list(highlight)
    fig, ax = _figure(9, 5.5)
    latency_ms = ops["latency_ns"].to_numpy(dtype=np.float64) / NS_PER_MS
    groups = group_positions(ops["node"])
    grey_done = False
    for node, positions in groups.items():
        # Sorted first: the same quantiles, faster (analysis.stats.grouped).
        quantiles = np.percentile(np.sort(latency_ms[positions]), _CDF_QUANTILES)
        values = np.maximum(quantiles, 1e-3)
        if str(node) in flagged:
            colour = _SLOW_COLOURS[flagged.index(str(node)) % len(_SLOW_COLOURS)]
            ax.plot(values, _CDF_QUANTILES, color=colour, linewidth=2.2, label=f"{node} (slow)")
        else:
            label = None if grey_done else "other nodes"
            ax.plot(values, _CDF_QUANTILES, color="#7f7f7f", linewidth=1, alpha=0.6, label=label)
            grey_done = True
    ax.set_xscale("log")
    ax.set_xlabel("storage op latency (ms, log scale)")
    ax.set_ylabel("ops completed within (%)")
    ax.set_ylim(0, 100)
    ax.axvline(100, color="black", linestyle=":", linewidth=1)
    ax.text(100, 2, " 100 ms", fontsize=8)
    ax.set_title(f"Latency CDF per node{f' ({title_op})' if title_op else ''}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def io_depth_histogram(histogram: pd.DataFrame, path: Path) -> Path:
    """Share of submits per io_depth bucket."""
    fig, ax = _figure(8, 4.5)
    bars = ax.bar(histogram["io_depth"].astype(str), histogram["share_pct"], color="#1f77b4")
    for bar, share in zip(bars, histogram["share_pct"], strict=True):
        if share > 0:
            ax.annotate(f"{share:.1f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)  # fmt: skip
    ax.set_xlabel("io_depth: SQEs per io_uring submit")
    ax.set_ylabel("submits (%)")
    ax.set_title(f"io_depth histogram ({int(histogram['submits'].sum()):,} submits)")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def node_heatmap(over_time: pd.DataFrame, path: Path, *, slow_ms: float = 100.0) -> Path:
    """Share of slow ops per node and time bucket: constant vs passing problems."""
    grid = over_time.pivot_table(
        index="node", columns="t_start_s", values="slow_pct", observed=True, aggfunc="mean"
    )
    fig, ax = _figure(10, max(3.0, 0.32 * len(grid) + 1.5))
    colours = LinearSegmentedColormap.from_list("slow", ["#f7f7f7", "#fdae61", "#d7191c"])
    image = ax.imshow(grid.to_numpy(), aspect="auto", cmap=colours, vmin=0, vmax=100,
                      interpolation="nearest")  # fmt: skip
    ax.set_yticks(range(len(grid)), [str(node) for node in grid.index], fontsize=8)
    starts = list(grid.columns)
    step = max(1, len(starts) // 12)
    ax.set_xticks(
        range(0, len(starts), step), [f"{starts[i]:g}" for i in range(0, len(starts), step)]
    )
    ax.set_xlabel("time since run start (s), bucket start")
    ax.set_ylabel("node")
    ax.set_title(f"Slow storage ops (> {slow_ms:g} ms) per node over time")
    fig.colorbar(image, ax=ax, label=f"ops slower than {slow_ms:g} ms (%)")
    return _save(fig, path)


def bytes_per_node(bytes_by_node: pd.DataFrame, path: Path) -> Path:
    """Storage bytes per node, stacked by op (read, write, ...), in MiB."""
    mib = bytes_by_node / (1024 * 1024)
    fig, ax = _figure(max(6.0, 0.45 * len(mib) + 2), 4.5)
    bottom = np.zeros(len(mib))
    labels = [str(node) for node in mib.index]
    for op in mib.columns:
        values = mib[op].to_numpy(dtype=np.float64)
        if values.sum() == 0:
            continue
        ax.bar(labels, values, bottom=bottom, label=str(op))
        bottom += values
    mean = bottom.mean() if len(bottom) else 0.0
    ax.axhline(mean, color="black", linestyle="--", linewidth=1, label=f"mean {mean:,.0f} MiB")
    ax.set_xlabel("node")
    ax.set_ylabel("data stored or read (MiB)")
    ax.set_title("Bytes per node (storage ops)")
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    ax.set_ylim(
        0, max(float(bottom.max()) if len(bottom) else 0.0, 1.0) * 1.3
    )  # room for the legend
    ax.legend(fontsize=8, loc="upper left", ncols=3)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    return path


def repetition_values(samples: pd.DataFrame, metric: str, label: str, path: Path) -> Path:
    """Each repetition's value of one metric, run A beside run B per phase, means marked:
    the spread that the comparison's verdicts weigh a change against."""
    rows = samples[samples["metric"] == metric]
    if "point" not in rows.columns:  # two runs, not two sweeps
        rows = rows.assign(point="")
    groups = [str(group) for group in dict.fromkeys(rows["point"])]
    fig, ax = _figure(max(6.5, 1.6 * len(groups) * rows["phase"].nunique() + 2), 4.5)
    ticks, names = [], []
    position = 0.0
    for group in groups:
        of_group = rows[rows["point"] == group]
        for phase in dict.fromkeys(of_group["phase"]):
            for offset, run, colour in ((-0.18, "A", "#1f77b4"), (0.18, "B", "#d62728")):
                values = of_group[(of_group["phase"] == phase) & (of_group["run"] == run)]["value"]
                x = np.full(len(values), position + offset)
                first = position == 0.0
                ax.scatter(x, values, color=colour, s=22, alpha=0.8, label=run if first else None)
                ax.hlines(values.mean(), position + offset - 0.12, position + offset + 0.12,
                          color=colour, linewidth=2)  # fmt: skip
            ticks.append(position)
            names.append(f"{group}\n{phase}" if group else str(phase))
            position += 1.0
    ax.set_xticks(ticks, names, fontsize=8)
    ax.set_xlim(-0.6, position - 0.4)
    values = rows["value"].to_numpy(dtype=np.float64)
    if values.size and values.min() > 0 and values.max() / values.min() > 20:
        ax.set_yscale("log")  # a run many times slower would flatten the other to a line
        ax.set_ylabel(f"{label}, log scale")
    else:
        ax.set_ylabel(label)
    ax.set_title(f"{label} per repetition (bar: mean of the repetitions)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def node_over_runs(runs: pd.DataFrame, node: str, path: Path) -> Path:
    """One node's figures run by run: the engine's mean and p99 per storage op (log
    scale) above, the preflight's read and write MiB/s below; flagged runs in red.

    ``runs``: one row per run, ``started`` (datetime), ``flagged`` (bool) and, where
    measured, ``mean_ms``, ``p99_ms``, ``preflight_read_MiB_s``, ``preflight_write_MiB_s``.
    """
    fig = Figure(figsize=(9, 6))
    top, bottom = fig.subplots(2, 1, sharex=True)
    when = pd.to_datetime(runs["started"])
    flagged = runs["flagged"].to_numpy(dtype=bool)
    for column, label, style in (("mean_ms", "mean", "-o"), ("p99_ms", "p99", "--s")):
        if column in runs and runs[column].notna().any():
            top.plot(when, runs[column], style, color="#1f77b4", label=f"storage op {label}")
            marked = runs[column].where(flagged)
            top.plot(when, marked, "o", color="#d62728", markersize=9, label=None)
    if flagged.any():
        for moment in when[flagged]:
            for ax in (top, bottom):
                ax.axvline(moment, color="#d62728", alpha=0.25, linewidth=6)
    top.set_yscale("log")
    top.set_ylabel("ms per storage op (log scale)")
    top.set_title(f"{node}: its figures run by run (red: flagged in that run)")
    top.grid(True, alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize=8)
    preflight = (("preflight_read_MiB_s", "preflight read", "#2ca02c"),
                 ("preflight_write_MiB_s", "preflight write", "#9467bd"))  # fmt: skip
    for column, label, colour in preflight:
        if column in runs and runs[column].notna().any():
            bottom.plot(when, runs[column], "-o", color=colour, label=label)
    bottom.set_ylabel("MiB/s (fio, before the run)")
    bottom.set_xlabel("run started (UTC)")
    bottom.grid(True, alpha=0.3)
    if bottom.get_legend_handles_labels()[0]:
        bottom.legend(fontsize=8)
    return _save(fig, path)
