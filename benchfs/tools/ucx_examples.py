"""Run the UCX binding's example programs used as references beside ucx_perftest.

- ``am_pingpong``: the binding's own active-message ping-pong (4 KiB round
  trip) and window of bulk sends (1 MiB bandwidth) between two processes;
  ``--recv-copy`` makes both sides copy each received eager payload out of
  UCX's buffer, as an RPC must deliver it.
- ``core_to_core``: a cache line passed back and forth between two CPUs,
  which shows where the host has placed the two virtual CPUs at the moment.

They are cargo examples of the ``benchfs-ucx`` crate, not in the wheel:
they are looked for in the directory given, else in the release build of
the engine's source tree the installed package was built from (its
``build_info()["source_dir"]``, wherever the command runs), and built there
with cargo on first use (``make examples`` does the same). Without that
tree the error says in one line how to get them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchfs.errors import ToolError
from benchfs.tools.process import run_tool

BUILD_COMMAND = "make examples"
NAMES = ("am_pingpong", "core_to_core")
CORE_TO_CORE_ITERATIONS = 100_000
# Building them compiles the UCX binding once more if the wheel's build is gone.
BUILD_DEADLINE_S = 1800.0


@dataclass(frozen=True)
class Examples:
    am_pingpong: Path
    core_to_core: Path


def find_examples(
    directory: Path | None = None,
    *,
    source_dir: Path | None = None,
    on_step: Callable[[str], None] = lambda _: None,
) -> Examples:
    """Both example binaries: in ``directory`` when given, else in the release
    build of ``source_dir`` (default: the source tree this package was built
    from), built there first when they are not."""
    if directory is not None:
        found = _present(directory)
        if found is None:
            raise ToolError(
                f"{directory}: no {' and '.join(NAMES)} there (--examples-dir): build them "
                f"with `{BUILD_COMMAND}` in a BenchFS source tree"
            )
        return found
    source = source_dir if source_dir is not None else built_from()
    how = (
        f"build them with `{BUILD_COMMAND}` in a BenchFS source tree and give "
        "--examples-dir SOURCE/benchfs_native/target/release/examples"
    )
    if source is None or not (source / "Cargo.toml").is_file():
        gone = "is not known" if source is None else f"({source}) is not there"
        raise ToolError(
            f"the UCX examples {' and '.join(NAMES)} are not installed with the package and "
            f"the source tree it was built from {gone}: {how}"
        )
    built = examples_dir_of(source)
    found = _present(built)
    if found is not None:
        return found
    argv = build_argv(source)
    if shutil.which(argv[0]) is None:
        raise ToolError(
            f"the UCX examples are not built in {built} and cargo is not on PATH: {how}"
        )
    on_step(f"building the UCX examples {' and '.join(NAMES)} once, into {built}: {' '.join(argv)}")
    result = run_tool(argv, tool="cargo", where="the UCX examples", timeout_s=BUILD_DEADLINE_S)
    said = (result.stderr or result.stdout).strip().splitlines()[-1:]
    found = _present(built)
    if result.returncode != 0 or found is None:
        raise ToolError(
            f"building the UCX examples failed (exit code {result.returncode}): "
            f"{' '.join(said) or 'no output'}; {how}"
        )
    return found


def built_from() -> Path | None:
    """The engine's source directory when this extension was built, if it says."""
    import benchfs_native

    source = dict(benchfs_native.build_info()).get("source_dir")
    return Path(source) if isinstance(source, str) and source else None


def examples_dir_of(source: Path) -> Path:
    """Where cargo puts the release examples of the crate at ``source``."""
    target = os.environ.get("CARGO_TARGET_DIR")
    return (Path(target) if target else source / "target") / "release" / "examples"


def build_argv(source: Path) -> list[str]:
    """What ``make examples`` runs, for the source tree at ``source``."""
    examples = [token for name in NAMES for token in ("--example", name)]
    return ["cargo", "build", "--release", "--manifest-path", str(source / "Cargo.toml"),
            "-p", "benchfs-ucx", *examples]  # fmt: skip


def _present(where: Path) -> Examples | None:
    found = Examples(where / NAMES[0], where / NAMES[1])
    if all(
        path.is_file() and os.access(path, os.X_OK)
        for path in (found.am_pingpong, found.core_to_core)
    ):
        return found
    return None


def core_to_core_ns(
    binary: Path, cpus: tuple[int, int] = (0, 1), iterations: int = CORE_TO_CORE_ITERATIONS
) -> float:
    """Median cache-line round trip between ``cpus``, in ns."""
    where = f"cpus {cpus[0]},{cpus[1]}"
    argv = [str(binary), "--cpus", f"{cpus[0]},{cpus[1]}", "--iters", str(iterations)]
    out = _checked(argv, tool="core_to_core", where=where, timeout_s=60.0)
    values = key_values(out, "c2c")
    if "rtt_p50_ns" not in values:
        raise ToolError(f"core_to_core {where}: no rtt_p50_ns in its output")
    return values["rtt_p50_ns"]


@dataclass(frozen=True)
class PingPongResult:
    rtt_p50_us: float
    rtt_p99_us: float
    bandwidth_MiBps: float


def run_am_pingpong(
    binary: Path,
    *,
    lat_iterations: int,
    bw_iterations: int,
    window: int = 16,
    lat_size: int = 4096,
    bw_size: int = 1 << 20,
    recv_copy: bool = False,
    recv_buffers: int = 2,
    huge_source: bool = False,
    cpus: tuple[int, int] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
) -> PingPongResult:
    """One run of am_pingpong: its round trip (p50, p99) and bandwidth.

    ``recv_buffers``: the responder's pool of bulk receive buffers.
    ``huge_source``: bulk sends from transparent huge pages, not the heap.
    ``cpus``: (this process's CPU, the responder's CPU) to pin each to one CPU.
    """
    pinning = [] if cpus is None else ["--cpu", str(cpus[0]), "--peer-cpu", str(cpus[1])]
    argv = [
        str(binary),
        "--lat-size", str(lat_size),
        "--lat-iters", str(lat_iterations),
        "--warmup", str(lat_iterations // 10),
        "--bw-size", str(bw_size),
        "--bw-iters", str(bw_iterations),
        "--window", str(window),
        "--recv-buffers", str(recv_buffers),
        *pinning,
        *(["--recv-copy"] if recv_copy else []),
        *(["--huge-source"] if huge_source else []),
    ]  # fmt: skip
    where = f"{lat_size} B x {lat_iterations}, {bw_size} B x {bw_iterations}"
    out = _checked(argv, tool="am_pingpong", where=where, timeout_s=timeout_s, env=env)
    lat, bw = key_values(out, "am_lat"), key_values(out, "am_bw")
    try:
        return PingPongResult(lat["rtt_p50_us"], lat["rtt_p99_us"], bw["MiB/s"])
    except KeyError as missing:
        raise ToolError(f"am_pingpong {where}: no {missing} in its output") from None


def _checked(
    argv: list[str],
    *,
    tool: str,
    where: str,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> str:
    result = run_tool(argv, tool=tool, where=where, timeout_s=timeout_s, env=env)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
        raise ToolError(f"{tool} {where} exited with {result.returncode}: {' '.join(tail)}")
    return result.stdout


def key_values(output: str, prefix: str) -> dict[str, float]:
    """The numeric ``key=value`` fields of the line starting with ``prefix``."""
    for line in output.splitlines():
        words = line.split()
        if words and words[0] == prefix:
            values: dict[str, float] = {}
            for word in words[1:]:
                key, _, value = word.partition("=")
                try:
                    values[key] = float(value)
                except ValueError:
                    continue  # cpus=0,1 and the like
            return values
    return {}
