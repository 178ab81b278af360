"""Daemon config files written from a RunConfig, the exact command lines
that start the daemons through each launcher, waiting for their registration,
and naming what failed."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from node.registry_records import write_record

from benchfs.cluster.hostfile import Host
from benchfs.config import RunConfig, apply_overrides, load_config
from benchfs.daemon.settings import daemon_config_path, parse_daemon_config, resolve_daemon_config
from benchfs.errors import LaunchError
from benchfs.launchers import get_launcher
from benchfs.run.daemons import (
    daemon_commands,
    daemon_config_text,
    daemon_slots,
    log_tail,
    membership_missing,
    ranks_named,
    write_daemon_configs,
)
from benchfs.run.observer import RunObserver
from benchfs.run.workloads.rank_job import ProgressWatch, rank_failure
from benchfs.workload.spec import WorkloadSpec, workload_spec

PY = "/venv/bin/python"
CONTRACT_KEYS = {
    "node_name", "node_id", "daemon_index", "data_dir", "registry_dir", "chunk_size",
    "buffer_pool_size", "durability", "transport", "trace_dir", "shutdown_deadline_s",
    "bulk_spin_us",
}  # fmt: skip
HOSTS = [Host("n1", 4), Host("n2", 4)]


def config(**overrides: str) -> RunConfig:
    return apply_overrides(load_config(None), overrides).base


def test_slots_number_daemons_host_by_host() -> None:
    slots = daemon_slots(HOSTS, 2, "/scratch/benchfs-1-g0")
    assert [(s.host.name, s.daemon_index, s.node_id, s.node_name) for s in slots] == [
        ("n1", 0, 0, "n1"),
        ("n1", 1, 1, "n1-d1"),
        ("n2", 0, 2, "n2"),
        ("n2", 1, 3, "n2-d1"),
    ]
    assert slots[3].data_dir == "/scratch/benchfs-1-g0/n2-d1"


def test_daemon_config_follows_the_contract(tmp_path: Path) -> None:
    run = config(
        **{
            "cluster.chunk_size": "1m",
            "cluster.buffer_pool_size": "64m",
            "cluster.durability": "fsync_on_close",
            "cluster.transport": "tcp",
            "cluster.deadlines.shutdown_s": "7",
        }
    )
    slots = daemon_slots(HOSTS, 1, "/data/benchfs-x")
    paths = write_daemon_configs(
        slots, run.cluster, tmp_path / "configs", tmp_path / "reg", tmp_path / "traces"
    )
    assert paths == [tmp_path / "configs" / "daemon-0.toml", tmp_path / "configs" / "daemon-1.toml"]
    assert daemon_config_path(tmp_path / "configs", 1) == paths[1]
    values = tomllib.loads(paths[1].read_text())
    assert values == {
        "node_name": "n2",
        "node_id": 1,
        "daemon_index": 0,
        "data_dir": "/data/benchfs-x/n2",
        "registry_dir": str(tmp_path / "reg"),
        "chunk_size": 1 << 20,
        "buffer_pool_size": 64 << 20,
        "durability": "fsync_on_close",
        "transport": "tcp",
        "trace_dir": str(tmp_path / "traces"),
        "shutdown_deadline_s": 7.0,
        "bulk_spin_us": 0,
    }
    assert set(values) == CONTRACT_KEYS
    settings = resolve_daemon_config(
        parse_daemon_config(paths[1].read_text(), str(paths[1])), str(paths[1]), env={}
    )
    assert (settings.node_name, settings.node_id, settings.data_dir) == (
        "n2",
        1,
        "/data/benchfs-x/n2",
    )


def test_daemon_config_quotes_strings() -> None:
    slot = daemon_slots([Host("n1")], 1, '/data/odd "dir"')[0]
    text = daemon_config_text(slot, RunConfig().cluster, Path("/r"), None)
    values = tomllib.loads(text)
    assert values["data_dir"] == '/data/odd "dir"/n1'
    assert values["trace_dir"] == ""


def test_local_daemons_one_command_each() -> None:
    slots = daemon_slots([Host("local0"), Host("local1")], 1, "/d")
    commands = daemon_commands(
        get_launcher("local"), slots, [], 1, Path("/s/configs"),
        env={"UCX_POSIX_DIR": "/dev/shm/benchfs-1"}, python=PY,
    )  # fmt: skip
    assert [(c.name, c.argv, c.log_name) for c in commands] == [
        (
            "daemon local0",
            ["env", "UCX_POSIX_DIR=/dev/shm/benchfs-1",
             PY, "-m", "benchfs.node.daemon", "--config", "/s/configs/daemon-0.toml"],
            "local0.log",
        ),
        (
            "daemon local1",
            ["env", "UCX_POSIX_DIR=/dev/shm/benchfs-1",
             PY, "-m", "benchfs.node.daemon", "--config", "/s/configs/daemon-1.toml"],
            "local1.log",
        ),
    ]  # fmt: skip


def test_mpirun_daemons_one_job_across_hosts() -> None:
    launcher = get_launcher("mpirun", allow_run_as_root=False, mca={"btl": "tcp,self"})
    slots = daemon_slots(HOSTS, 2, "/d")
    (command,) = daemon_commands(
        launcher, slots, HOSTS, 2, Path("/s/configs"),
        env={"UCX_POSIX_DIR": "/dev/shm/benchfs-1"}, shm_dir="/dev/shm/benchfs-1", python=PY,
    )  # fmt: skip
    assert command.argv == [
        "mpirun", "--mca", "btl", "tcp,self", "-np", "4", "-H", "n1:2,n2:2", "--map-by", "slot",
        "-x", "UCX_POSIX_DIR=/dev/shm/benchfs-1",
        PY, "-m", "benchfs.node.daemon", "--config-dir", "/s/configs",
        "--shm-dir", "/dev/shm/benchfs-1",
    ]  # fmt: skip
    assert command.slots == tuple(slots)


def test_mpich_and_srun_daemons() -> None:
    slots = daemon_slots(HOSTS, 1, "/d")
    (mpich,) = daemon_commands(
        get_launcher("mpirun", flavour="mpich"), slots, HOSTS, 1, Path("/c"), python=PY
    )
    assert mpich.argv == [
        "mpiexec", "-hosts", "n1,n2", "-ppn", "1", "-n", "2", "-genv", "MPI4PY_MPIABI", "mpich",
        PY, "-m", "benchfs.node.daemon", "--config-dir", "/c",
    ]  # fmt: skip
    (srun,) = daemon_commands(
        get_launcher("srun"), slots, HOSTS, 1, Path("/c"), env={"UCX_TLS": "tcp"}, python=PY
    )
    assert srun.argv == [
        "srun", "--overlap", "--mpi=pmix", "-w", "n1,n2", "-N2", "-n2", "--ntasks-per-node=1",
        "--export=ALL,UCX_TLS=tcp", PY, "-m", "benchfs.node.daemon", "--config-dir", "/c",
    ]  # fmt: skip


def test_spec_ranks_hosts_and_shift(tmp_path: Path) -> None:
    run = config(**{"workload.tasks_per_node": "2", "workload.api": "shared"})
    spec = workload_spec(
        run, hosts=["a", "b", "c"], node_names=["a", "b", "c"], registry_dir=tmp_path / "r",
        workload_dir=tmp_path / "w", state_dir=tmp_path / "s", trace_dir=None,
    )  # fmt: skip
    assert spec.ranks == 6
    assert [spec.host_of(r) for r in range(6)] == ["a", "a", "b", "b", "c", "c"]
    assert spec.read_rank_shift == 2  # IOR -C: the task one node further
    assert not spec.file_per_process
    assert WorkloadSpec.read(spec.write(tmp_path / "spec.json")) == spec
    single = workload_spec(
        config(**{"workload.reorder_tasks": "false"}), hosts=["a"], node_names=["a"],
        registry_dir=tmp_path, workload_dir=tmp_path, state_dir=tmp_path, trace_dir=None,
    )  # fmt: skip
    assert single.read_rank_shift == 0


def test_membership_names_missing_and_misnumbered(tmp_path: Path) -> None:
    slots = daemon_slots([Host("a"), Host("b"), Host("c")], 1, "/d")
    write_record(tmp_path, "a", 0)
    write_record(tmp_path, "b", 5)
    (tmp_path / ".c.json.tmp.1.0").write_text("{")
    assert membership_missing(tmp_path, slots) == (
        "missing c (2 of 3 registered); b registered as node 5 (expected 1)"
    )
    write_record(tmp_path, "b", 1)
    write_record(tmp_path, "c", 2)
    assert membership_missing(tmp_path, slots) is None


def test_a_corrupt_record_is_an_error_naming_it(tmp_path: Path) -> None:
    slots = daemon_slots([Host("a")], 1, "/d")
    (tmp_path / "a.json").write_text('{"node_name": "a"')
    with pytest.raises(LaunchError, match=r"a\.json"):
        membership_missing(tmp_path, slots)
    assert membership_missing(tmp_path / "not-yet", slots) == "missing a (0 of 1 registered)"


def test_launcher_logs_name_the_failed_rank() -> None:
    log = (
        "--------------------------------------------------------------------------\n"
        "mpirun noticed that process rank 2 with PID 4242 on node n3 exited on signal 9 (Killed).\n"
        "--------------------------------------------------------------------------\n"
    )
    assert ranks_named(log) == [2]
    assert ranks_named("MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD") == [1]
    assert ranks_named("all fine") == []


def test_a_rank_killed_by_a_signal_is_named_before_the_errors_it_caused(tmp_path: Path) -> None:
    spec = workload_spec(
        config(), hosts=["a", "b"], node_names=["a", "b"], registry_dir=tmp_path,
        workload_dir=tmp_path, state_dir=tmp_path / "state", trace_dir=None,
    )  # fmt: skip
    log = tmp_path / "workload.log"
    log.write_text(
        "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n"
    )
    spec.rank_file(1).parent.mkdir(parents=True)
    spec.rank_file(1).write_text('{"pid": 4242}')
    spec.rank_file(0, "error").write_text("workload rank 0 on a (pid 7): rpc failed\n")
    assert rank_failure(spec, log, 137) == "workload rank 1 on b (pid 4242) was killed by SIGKILL"
    log.write_text("MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\n")
    assert rank_failure(spec, log, 1) == "workload rank 0 on a (pid 7): rpc failed"
    spec.rank_file(0, "error").unlink()
    assert rank_failure(spec, log, 1) == (
        "workload rank 0 on a failed: "
        "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD"
    )


def test_a_start_is_late_only_when_no_further_rank_begins(tmp_path: Path) -> None:
    run = config()
    spec = workload_spec(
        run, hosts=["a", "b"], node_names=["a", "b"], registry_dir=tmp_path,
        workload_dir=tmp_path / "w", state_dir=tmp_path / "state", trace_dir=None,
    )  # fmt: skip
    (tmp_path / "w").mkdir()
    log = tmp_path / "workload.log"
    log.write_text("")
    watch = ProgressWatch(spec, run.cluster.deadlines, RunObserver(), log)
    watch.start()
    window = 10 * 365 * 86400.0  # further back than any start window

    def waited_past_the_window() -> None:
        watch.started -= window
        watch.poll()

    watch.poll()  # nothing yet, the window has just begun
    spec.rank_file(0).parent.mkdir(parents=True)
    spec.rank_file(0).write_text("{}")
    waited_past_the_window()  # a rank began: the window restarts
    assert watch.start_steps == 1
    late = rf"nothing moved for .* with 1 of {spec.ranks} ranks begun"
    with pytest.raises(LaunchError, match=late):
        waited_past_the_window()
    for rank in range(1, spec.ranks):
        spec.rank_file(rank).write_text("{}")
    waited_past_the_window()
    Path(spec.connect_file).write_text("")
    waited_past_the_window()  # every rank connected is one more step
    with pytest.raises(LaunchError, match=f"{spec.ranks} of {spec.ranks} ranks begun"):
        waited_past_the_window()


def test_log_tails_skip_backtraces(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.write_text(
        "benchfs daemon n1 (node 1) registered in 5 ms\n"
        "[vm:1:0:1] cma_ep.c:81 process_vm_readv returned -1: No such process\n"
        "==== backtrace (tid:   5705) ====\n"
        " 0  /lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7f]\n"
        "=================================\n"
    )
    assert log_tail(log, 2) == (
        "benchfs daemon n1 (node 1) registered in 5 ms; "
        "[vm:1:0:1] cma_ep.c:81 process_vm_readv returned -1: No such process"
    )
