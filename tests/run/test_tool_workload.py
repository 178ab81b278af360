"""A tool run in a target directory: fio for real on each node, its output
kept and parsed into the phases of its summary; IOR and mdtest for real when
they are found; a missing or failing tool named with what it said."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from run_helpers import IOR_SEARCH

from analysis.layout import RunLayout
from benchfs.cluster.hostfile import Host
from benchfs.cluster.lifecycle import Lifecycle
from benchfs.config.model import WorkloadConfig
from benchfs.errors import ConfigError, ToolError
from benchfs.launchers.local import LocalLauncher
from benchfs.run.workloads.external import ToolContext, ToolRun
from benchfs.run.workloads.place import PosixPlace
from benchfs.run.workloads.tool import plan_tool, run_tool_workload, tool_subdirs
from benchfs.tools.tool_argv import fio_argv

HOSTS = [Host("n0"), Host("n1")]
DEADLINE_S = 300.0  # only guards against a hang
# One job name, a write then a read: phases "write" and "read", as the built-in workload's.
FIO_ARGS = ["--name=seq", "--rw=write", "--bs=64k", "--size=4m", "--ioengine=psync",
            "--name=seq", "--rw=read", "--bs=64k", "--size=4m", "--ioengine=psync",
            "--stonewall"]  # fmt: skip

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


Phases = dict[str, dict[str, object]]


def _run(workload: WorkloadConfig, root: Path, hosts: list[Host] = HOSTS) -> tuple[ToolRun, Phases]:
    """What ran, and the phases of the summary document by name."""
    plan = plan_tool(workload)
    assert plan is not None
    place = PosixPlace(root / "target")
    run = ToolRun(plan.tool, str(plan.binary))
    with Lifecycle(handle_signals=False) as life:
        context = ToolContext(
            life=life,
            launcher=LocalLauncher(),
            hosts=hosts,
            tasks_per_node=2,
            place=place,
            layout=RunLayout(root / "results"),
            deadline_s=DEADLINE_S,
            run=run,
        )
        context.layout.tool_output_dir.mkdir(parents=True)
        place.make(*tool_subdirs(plan, hosts))
        document = run_tool_workload(plan, context)
    return run, {row["phase"]: row for row in document["phases"]}


@needs_fio
def test_fio_runs_on_every_node_and_its_phases_sum_the_nodes(tmp_path: Path) -> None:
    run, phases = _run(WorkloadConfig(tool="fio", tool_args=FIO_ARGS), tmp_path)
    binary = Path(shutil.which("fio") or "fio").absolute()
    assert run.tool == "fio" and run.version.startswith("fio-")
    for host in HOSTS:
        expected = fio_argv(binary, FIO_ARGS, tmp_path / "target" / host.name)
        assert run.commands[host.name] == expected
        assert (tmp_path / "target" / host.name / "seq.0.0").stat().st_size == 4 << 20
    assert run.outputs == ["workload/tool/fio-n0.json", "workload/tool/fio-n1.json"]
    assert sorted(phases) == ["read", "write"]
    for row in phases.values():
        assert row["tool"] == "fio" and row["kind"] == "data"
        assert row["tool_version"] == run.version.removeprefix("fio-")
        assert row["queue_depth"] == 1 and row["numTasks"] == 2  # a job on each node
        assert isinstance(row["bwMeanMIB"], float) and row["bwMeanMIB"] > 0


@needs_fio
def test_a_fio_job_file_runs_after_the_options_benchfs_sets(tmp_path: Path) -> None:
    job = tmp_path / "write.fio"
    job.write_text("[w]\nrw=write\nbs=128k\nsize=1m\nioengine=psync\n")
    run, phases = _run(WorkloadConfig(tool="fio", fio_job=str(job)), tmp_path, [Host("n0")])
    assert run.commands["n0"][-1] == str(job)
    assert list(phases) == ["write"]
    assert (tmp_path / "target" / "n0" / "w.0.0").stat().st_size == 1 << 20


@needs_fio
def test_a_failing_fio_is_named_with_its_exit_status_and_stderr(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as error:
        _run(WorkloadConfig(tool="fio", tool_args=["--name=x", "--rw=sideways"]), tmp_path)
    message = str(error.value)
    assert message.startswith("fio on n0 exited with status 1: ")
    assert "sideways" in message and "workload/tool" in message
    kept = RunLayout(tmp_path / "results").tool_stderr("fio", "n0")
    assert "sideways" in kept.read_text()


def test_a_missing_tool_names_the_setting_before_anything_runs(tmp_path: Path) -> None:
    workload = WorkloadConfig(tool="ior", tool_path=str(tmp_path / "ior-build" / "bin" / "ior"))
    with pytest.raises(ToolError, match=r"^ior not found: .*ior-build/bin/ior: no such file "
                                        r"or directory \(workload.tool_path = "):  # fmt: skip
        plan_tool(workload)
    assert plan_tool(WorkloadConfig()) is None


@needs_fio
def test_fio_without_a_job_is_refused_before_it_runs() -> None:
    with pytest.raises(ToolError, match=r"set workload.tool_args or workload.fio_job"):
        plan_tool(WorkloadConfig(tool="fio"))


needs_ior = pytest.mark.skipif(
    shutil.which("ior", path=IOR_SEARCH) is None or shutil.which("mpirun") is None,
    reason="ior or mpirun not found (PATH, $IOR_BIN_DIR, /opt/ior/bin)",
)
needs_mdtest = pytest.mark.skipif(
    shutil.which("mdtest", path=IOR_SEARCH) is None or shutil.which("mpirun") is None,
    reason="mdtest or mpirun not found (PATH, $IOR_BIN_DIR, /opt/ior/bin)",
)


@needs_ior
def test_ior_runs_as_one_mpi_job_and_its_json_summary_gives_the_phases(tmp_path: Path) -> None:
    args = ["-a", "POSIX", "-w", "-r", "-F", "-t", "64k", "-b", "1m"]
    workload = WorkloadConfig(
        tool="ior", tool_args=args, tool_path=shutil.which("ior", path=IOR_SEARCH)
    )
    run, phases = _run(workload, tmp_path, [Host("n0")])
    assert run.version.startswith("IOR-")
    assert run.commands["job"][-4:] == [
        "-O", "summaryFormat=JSON", "-O",
        f"summaryFile={RunLayout(tmp_path / 'results').ior_summary.absolute()}",
    ]  # fmt: skip
    assert {"write", "read"} <= set(phases)
    assert all(row["tool"] == "ior" for row in phases.values())


@needs_mdtest
def test_mdtest_runs_as_one_mpi_job_and_its_text_gives_the_phases(tmp_path: Path) -> None:
    path = shutil.which("mdtest", path=IOR_SEARCH)
    run, phases = _run(
        WorkloadConfig(tool="mdtest", tool_args=["-n", "20", "-F", "-u"], tool_path=path),
        tmp_path, [Host("n0")],
    )  # fmt: skip
    assert run.version.startswith("mdtest-")
    assert run.commands["job"][-2:] == ["-d", str(tmp_path / "target" / "mdtest")]
    assert "File creation" in phases
    assert all(row["tool"] == "mdtest" for row in phases.values())


@needs_fio
def test_arguments_benchfs_sets_are_refused_before_anything_runs() -> None:
    with pytest.raises(ConfigError, match=r"^workload.tool_args: fio --directory is set by"):
        plan_tool(WorkloadConfig(tool="fio", tool_args=["--name=a", "--directory=/x"]))
