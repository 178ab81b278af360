"""IOR, mdtest and fio on BenchFS's mount across three hosts through the
real mpirun launcher: each host a network namespace and a mount namespace
of its own, entered with nsenter (so, as on separate machines, the
processes of a host see the mount made there and no other host's), UCX
over tcp. Every rank of IOR and mdtest works in its own host's mount point
(the watcher notes each tool process's namespace and working directory),
IOR verifies every byte it wrote and read (-W -R, a rank reading another
host's file with -C), and no mount, process or file of the run is left.
The same for the IO500 suite by IOR and mdtest (its find and timestamp on
the first host through its mount) and by the io500 binary when found."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
from launchers.netns_hosts import NamespaceHosts, namespace_inode
from run_helpers import (
    IOR_SEARCH,
    ROOT_ENV,
    RunWatcher,
    assert_nothing_left,
    manifest,
    needs_mount,
    summary,
    tool_search,
)
from test_run_io500 import HARD_FILES, PHASES

from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.errors import ToolError
from benchfs.mount.cleanup import mounts_under
from benchfs.run.observer import PointResult
from benchfs.run.orchestrate import run_plan

MiB = 1 << 20
TASKS_PER_NODE = 2
IO500_SEARCH = tool_search("io500")
IO500 = shutil.which("io500", path=IO500_SEARCH)
CASES = {
    # File per process, each rank reading back the file of a rank on the next host (-C).
    "ior-file-per-process": ("ior", ["-a", "POSIX", "-w", "-r", "-W", "-R", "-F", "-C", "-e",
                                     "-t", "64k", "-b", "1m"]),
    # One shared file: every rank names the same path.
    "ior-shared-file": ("ior", ["-a", "POSIX", "-w", "-r", "-W", "-R", "-C", "-e",
                                "-t", "64k", "-b", "1m"]),
    # A directory per rank; stat and read the files of the next host's ranks (-N).
    "mdtest": ("mdtest", ["-n", "20", "-F", "-u", "-w", "4096", "-e", "4096", "-X",
                          "-N", str(TASKS_PER_NODE)]),
    "fio": ("fio", ["--name=seq", "--rw=write", "--bs=64k", "--size=1m", "--ioengine=psync",
                    "--verify=crc32c", "--name=seq", "--rw=read", "--bs=64k", "--size=1m",
                    "--ioengine=psync", "--stonewall"]),
}  # fmt: skip


class ToolWatcher(RunWatcher):
    """Notes, for every process running one of ``binaries``, its network
    namespace and working directory while the run goes on."""

    def __init__(self, *binaries: str) -> None:
        super().__init__()
        self.binaries = {os.path.realpath(binary) for binary in binaries}
        self.seen: dict[tuple[int, str], tuple[str, str]] = {}  # (pid, start) -> ns, cwd

    def run(self) -> None:
        while not self.stop.wait(0.01):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if os.readlink(entry / "exe") not in self.binaries:
                        continue
                    # A pid may come again in a later job: the start time tells them apart.
                    key = (
                        int(entry.name),
                        (entry / "stat").read_text().rsplit(")", 1)[1].split()[19],
                    )
                    if key not in self.seen:
                        self.seen[key] = (
                            os.readlink(entry / "ns" / "net"),
                            os.readlink(entry / "cwd"),
                        )
                except (OSError, IndexError):
                    continue  # gone, or not ours to read


def run_on_hosts(
    hosts: NamespaceHosts, tmp_path: Path, settings: Mapping[str, object], *binaries: str
) -> tuple[PointResult, ToolWatcher]:
    """One point on the mount of the three hosts through mpirun, the tool's
    processes watched while it runs."""
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts.hosts))
    plan = apply_overrides(
        load_config(None),
        {
            **hosts.run_settings(tmp_path / "data"),
            "workload.interface": "mount",
            "workload.tasks_per_node": TASKS_PER_NODE,
            "preflight.enabled": False,
            "output.results_dir": str(tmp_path / "results"),
            **settings,
        },
    )
    with ToolWatcher(*binaries) as watcher:
        (point,) = run_plan(plan, nodes_spec=str(hostfile))
    assert point.status == "completed", point.error
    return point, watcher


def processes_by_host(
    watcher: ToolWatcher, hosts: NamespaceHosts, root: str, *, in_mount_point: bool = True
) -> dict[str, int]:
    """How many of the tool's processes each host ran; each ran in its own
    host's mount point (``in_mount_point``), and every host ran some (those
    here, fio --version, aside)."""
    mount_of = {f"net:[{namespace_inode(h.name)}]": f"{root}/{h.name}" for h in hosts.hosts}
    here = os.readlink("/proc/self/ns/net")
    by_host: dict[str, int] = {}
    for namespace, cwd in watcher.seen.values():
        if namespace == here:
            continue
        assert namespace in mount_of, (namespace, cwd)
        if in_mount_point:
            assert cwd == mount_of[namespace], (namespace, cwd)
        by_host[namespace] = by_host.get(namespace, 0) + 1
    assert sorted(by_host) == sorted(mount_of), watcher.seen
    return by_host


def check_nothing_left(hosts: NamespaceHosts, tmp_path: Path, work: str) -> None:
    assert mounts_under(tmp_path) == []
    for host in hosts.hosts:
        assert mounts_under(tmp_path, hosts.mountinfo(host)) == [], host
    assert_nothing_left(tmp_path, work.removeprefix("benchfs-").removesuffix("-p0"))


@needs_mount
@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tool_on_the_mount_across_three_namespace_hosts_through_mpirun(
    three_hosts_with_own_mounts: NamespaceHosts,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    tool, args = CASES[case]
    binary = shutil.which(tool, path=IOR_SEARCH)
    if binary is None or shutil.which("iostat") is None:
        pytest.skip(f"{tool} or iostat not found ({tool}: PATH, $IOR_BIN_DIR, /opt/ior/bin)")
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    settings = {"workload.tool": tool, "workload.tool_args": args, "workload.tool_path": binary}
    point, watcher = run_on_hosts(three_hosts_with_own_mounts, tmp_path, settings, binary)

    recorded = manifest(point.run_dir)
    root = recorded["mount"]["root"]
    work = Path(recorded["target"]["directory"]).name  # benchfs-<token>-p0
    by_host = processes_by_host(
        watcher, three_hosts_with_own_mounts, root, in_mount_point=tool != "fio"
    )
    if tool == "fio":  # fio's jobs are processes of their own
        assert all(count >= 1 for count in by_host.values()), by_host
    else:
        assert all(count == TASKS_PER_NODE for count in by_host.values()), by_host
    phases = {row["phase"]: row for row in summary(point.run_dir)["phases"]}
    assert all((row["tool"], row["interface"]) == (tool, "mount") for row in phases.values())
    command_lines = recorded["tool"]["command_lines"]
    if tool == "ior":
        # 6 ranks x 1 MiB each way, every byte checked after writing and reading (-W -R).
        for row in phases.values():
            assert (row["numTasks"], row["xsizeMiB"], row["reorderTasks"]) == (6, 6.0, 1), row
        argv = command_lines["job"]
        assert argv[argv.index("-o") + 1] == f"{work}/ior/testfile"  # relative to the mount point
    elif tool == "mdtest":
        assert phases["File creation"]["items"] == 6 * 20
        assert phases["File read"]["items"] == 6 * 20
    else:
        for host in three_hosts_with_own_mounts.hosts:  # fio through each host's own mount point
            directory = command_lines[host.name][2]
            assert directory == f"--directory={root}/{host.name}/{work}/{host.name}"
        # 3 hosts x 1 MiB written, read back by the write job's verification and the read job.
        assert (phases["write"]["bytes"], phases["read"]["bytes"]) == (3 * MiB, 6 * MiB)
        assert phases["write"]["errors"] == phases["read"]["errors"] == 0
    launched = recorded["tool"]["launched"]
    assert all(argv[0] == "mpirun" for argv in launched.values()), launched
    check_nothing_left(three_hosts_with_own_mounts, tmp_path, work)


@needs_mount
@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("suite_tool", ["ior", "io500"])
def test_the_io500_suite_s_tools_on_the_mount_across_three_namespace_hosts(
    three_hosts_with_own_mounts: NamespaceHosts,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    suite_tool: str,
) -> None:
    if suite_tool == "ior":
        ior, mdtest = shutil.which("ior", path=IOR_SEARCH), shutil.which("mdtest", path=IOR_SEARCH)
        if ior is None or mdtest is None:
            pytest.skip("ior or mdtest not found (PATH, $IOR_BIN_DIR, /opt/ior/bin)")
        binaries, tool_path = [ior, mdtest], str(Path(ior).parent)
    else:
        if IO500 is None:
            pytest.skip("the io500 binary not found (PATH, $IO500_BIN_DIR)")
        binaries, tool_path = [IO500], IO500
    if shutil.which("iostat") is None:
        pytest.skip("needs iostat")
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    settings = {
        "suite.name": "io500-quick",
        "suite.tool": suite_tool,
        "suite.tool_path": tool_path,
        "suite.ior_easy_transfer_size": "256k",
        "suite.ior_easy_block_size": "8m",
        "suite.ior_hard_segments": 100,
        "suite.mdtest_easy_files": 200,
        "suite.mdtest_hard_files": HARD_FILES,
    }
    point, watcher = run_on_hosts(three_hosts_with_own_mounts, tmp_path, settings, *binaries)

    recorded = manifest(point.run_dir)
    root = recorded["mount"]["root"]
    work = Path(recorded["target"]["directory"]).name
    by_host = processes_by_host(watcher, three_hosts_with_own_mounts, root)
    # The ranks of the tools' jobs (and what they forked) on every host, none elsewhere.
    assert all(count >= TASKS_PER_NODE for count in by_host.values()), by_host
    document = summary(point.run_dir)
    rows = {row["phase"]: row for row in document["phases"]}
    assert list(rows) == PHASES and document["score"] > 0
    assert all(row["io500_rate"] > 0 for row in rows.values())
    assert document["suite"]["tasks"] == 3 * TASKS_PER_NODE
    if suite_tool == "ior":
        # find, on the first host through its mount, scanned every file the tools made:
        # ior-easy's file per rank, ior-hard's one, and mdtest's.
        easy, hard = rows["mdtest-easy-write"]["items"], rows["mdtest-hard-write"]["items"]
        assert rows["find"]["items"] == 3 * TASKS_PER_NODE + 1 + easy + hard
        hard_read = recorded["tool"]["command_lines"]["mdtest-hard-read"]
        assert hard_read[hard_read.index("-d") + 1] == f"{work}/io500/mdtest-hard"
        assert "-X" in hard_read  # every file's bytes checked on reading
    else:
        assert f"datadir = {work}/io500-data\n" in recorded["tool"]["ini"]
    check_nothing_left(three_hosts_with_own_mounts, tmp_path, work)


@needs_mount
@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_failing_tool_on_the_mount_across_hosts_fails_the_run_and_leaves_nothing(
    three_hosts_with_own_mounts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = shutil.which("ior", path=IOR_SEARCH)
    if binary is None or shutil.which("iostat") is None:
        pytest.skip("ior or iostat not found (ior: PATH, $IOR_BIN_DIR, /opt/ior/bin)")
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    # IOR refuses a block size that is not a multiple of the transfer size, on every rank.
    args = ["-a", "POSIX", "-w", "-t", "64k", "-b", "100k"]
    settings = {"workload.tool": "ior", "workload.tool_args": args, "workload.tool_path": binary}
    with pytest.raises(ToolError, match=r"^ior exited with status \d+: .*workload/tool"):
        run_on_hosts(three_hosts_with_own_mounts, tmp_path, settings, binary)
    (run_dir,) = (tmp_path / "results").glob("*-run")
    recorded = manifest(run_dir)
    assert recorded["status"] == "failed"
    work = Path(recorded["target"]["directory"]).name
    assert not any("not removed" in note for note in recorded["notes"]), recorded["notes"]
    check_nothing_left(three_hosts_with_own_mounts, tmp_path, work)
