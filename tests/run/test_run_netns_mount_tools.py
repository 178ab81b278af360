"""IOR, mdtest and fio on BenchFS's mount across three hosts through the
real mpirun launcher: each host a network namespace entered with nsenter
(so, as on a real host, the processes there see the mount made there), UCX
over tcp. Every rank of IOR and mdtest works in its own host's mount point
(the watcher notes each tool process's namespace and working directory),
IOR verifies every byte it wrote and read (-W -R, a rank reading another
host's file with -C), and no mount, process or file of the run is left."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from launchers.netns_hosts import NamespaceHosts, namespace_inode
from run_helpers import ROOT_ENV, assert_nothing_left, manifest, needs_mount, summary

from benchfs.cluster.hostfile import format_hostfile
from benchfs.config import apply_overrides, load_config
from benchfs.mount.cleanup import mounts_under
from benchfs.run.orchestrate import run_plan

MiB = 1 << 20
TASKS_PER_NODE = 2
SEARCH = os.pathsep.join(
    part for part in (os.environ.get("PATH"), os.environ.get("IOR_BIN_DIR"), "/opt/ior/bin") if part
)
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


class ToolWatcher(threading.Thread):
    """Notes, for every process running ``binary``, its network namespace and
    working directory while the run goes on."""

    def __init__(self, binary: str) -> None:
        super().__init__(daemon=True)
        self.binary = os.path.realpath(binary)
        self.seen: dict[int, tuple[str, str]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.01):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit() or int(entry.name) in self.seen:
                    continue
                try:
                    if os.readlink(entry / "exe") != self.binary:
                        continue
                    namespace = os.readlink(entry / "ns" / "net")
                    cwd = os.readlink(entry / "cwd")
                except OSError:
                    continue  # gone, or not ours to read
                self.seen[int(entry.name)] = (namespace, cwd)


@needs_mount
@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tool_on_the_mount_across_three_namespace_hosts_through_mpirun(
    three_hosts_sharing_mounts: NamespaceHosts,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    tool, args = CASES[case]
    binary = shutil.which(tool, path=SEARCH)
    if binary is None or shutil.which("iostat") is None:
        pytest.skip(f"{tool} or iostat not found ({tool}: PATH, $IOR_BIN_DIR, /opt/ior/bin)")
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    hosts = three_hosts_sharing_mounts.hosts
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts))
    results = tmp_path / "results"
    plan = apply_overrides(
        load_config(None),
        {
            "launcher.name": "mpirun",
            "launcher.mca": three_hosts_sharing_mounts.mca(),
            "cluster.transport": "tcp",
            "cluster.data_dir": str(tmp_path / "data"),
            "cluster.chunk_size": "256k",
            "cluster.buffer_pool_size": "16m",
            "cluster.deadlines.shutdown_s": 5,
            "workload.interface": "mount",
            "workload.tool": tool,
            "workload.tool_args": args,
            "workload.tool_path": binary,
            "workload.tasks_per_node": TASKS_PER_NODE,
            "preflight.enabled": False,
            "output.results_dir": str(results),
        },
    )
    watcher = ToolWatcher(binary)
    watcher.start()
    try:
        (point,) = run_plan(plan, nodes_spec=str(hostfile))
    finally:
        watcher.stop.set()
        watcher.join()

    assert point.status == "completed", point.error
    recorded = manifest(point.run_dir)
    root = recorded["mount"]["root"]
    work = Path(recorded["target"]["directory"]).name  # benchfs-<token>-p0
    token = work.removeprefix("benchfs-").removesuffix("-p0")
    mount_of = {f"net:[{namespace_inode(h.name)}]": f"{root}/{h.name}" for h in hosts}
    # Every process of the tool ran in its own host's mount point, and every host had its own
    # (but fio --version, which the run asks here).
    here = os.readlink("/proc/self/ns/net")
    by_host: dict[str, int] = {}
    for namespace, cwd in watcher.seen.values():
        if namespace == here:
            continue
        assert namespace in mount_of, (namespace, cwd)
        if tool != "fio":
            assert cwd == mount_of[namespace], (namespace, cwd)
        by_host[namespace] = by_host.get(namespace, 0) + 1
    assert sorted(by_host) == sorted(mount_of), watcher.seen
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
        for host in hosts:  # fio on each host through its own mount point
            assert (
                command_lines[host.name][2] == f"--directory={root}/{host.name}/{work}/{host.name}"
            )
        # 3 hosts x 1 MiB written, read back by the write job's verification and the read job.
        assert (phases["write"]["bytes"], phases["read"]["bytes"]) == (3 * MiB, 6 * MiB)
        assert phases["write"]["errors"] == phases["read"]["errors"] == 0
    launched = recorded["tool"]["launched"]
    assert all(argv[0] == "mpirun" for argv in launched.values()), launched
    assert mounts_under(tmp_path) == []
    assert_nothing_left(tmp_path, token)
