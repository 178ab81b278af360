"""Run config: loading, errors naming file and key, overrides, sweeps."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from run_helpers import small_args

from benchfs.config import (
    RunConfig,
    apply_overrides,
    effective_config,
    expand_sweep,
    load_config,
    needs_daemon_restart,
    parse_config,
)
from benchfs.errors import ConfigError

SAMPLE = """
[cluster]
daemons_per_node = 2
chunk_size = "1MiB"
durability = "fsync_on_close"

[cluster.deadlines]
register_s = 120

[workload]
api = "shared"
transfer_size = "64k"
block_size = "4m"
phases = ["write"]

[launcher]
name = "mpirun"
mca = { plm_rsh_agent = "/bin/agent" }
"""


def error_of(text: str, source: str = "run.toml") -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(text, source)
    return str(error.value)


def test_defaults_fill_every_key() -> None:
    plan = load_config(None)
    assert plan.base == RunConfig()
    effective = effective_config(plan.base)
    assert effective["cluster"]["chunk_size"] == 4 << 20
    assert effective["cluster"]["deadlines"] == {
        "register_s": 60.0,
        "rpc_s": 30.0,
        "phase_s": 3600.0,
        "shutdown_s": 10.0,
        "mount_s": 30.0,
        "per_node_s": 0.05,
    }
    assert effective["workload"]["phases"] == ["write", "read"]
    # The main job: one transfer in flight per rank, phases ended by a 15 s
    # stonewall well before the 8 GiB ceiling, a 4 s preflight.
    assert effective["workload"]["queue_depth"] == 1
    assert effective["workload"]["stonewall_s"] == 15.0
    assert effective["workload"]["block_size"] == 8 << 30
    assert effective["preflight"]["runtime_s"] == 4.0
    assert set(effective) == {
        "cluster", "launcher", "workload", "metadata", "suite", "mount", "preflight",
        "output", "history", "live",
    }  # fmt: skip
    # The live view: a sample a second, a straggler named and the run goes on.
    assert effective["live"] == {"interval_s": 1.0, "straggler": "warn"}
    # The history: SQLite under the results root; a node flagged in 2 of its
    # last 3 runs (within 24 h) left out by the preflight.
    assert effective["history"]["url"] is None and effective["history"]["preflight"] == "exclude"
    assert (effective["history"]["flagged_runs"], effective["history"]["last_runs"]) == (2, 3)
    assert effective["workload"]["interface"] == "native"
    assert effective["metadata"]["mode"] == "off"
    assert effective["suite"]["name"] == "none"
    json.dumps(effective)  # JSON-ready for the manifest


def test_test_runs_do_not_inherit_the_main_jobs_stonewall(tmp_path: Path) -> None:
    overrides = dict(item.split("=", 1) for item in small_args(tmp_path)[1::2] if "=" in item)
    assert overrides["workload.stonewall_s"] == "0"


def test_values_from_file(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(SAMPLE)
    config = load_config(path).base
    assert config.cluster.daemons_per_node == 2
    assert config.cluster.chunk_size == 1 << 20
    assert config.cluster.deadlines.register_s == 120
    assert config.cluster.deadlines.rpc_s == 30  # default kept beside a given key
    assert config.workload.transfer_size == 64 << 10
    assert config.workload.api == "shared"
    assert config.launcher.mca == {"plm_rsh_agent": "/bin/agent"}


def test_unknown_keys_name_file_and_dotted_key() -> None:
    assert error_of("[workload]\ntransfer_sise = '1m'\n") == (
        "run.toml: workload.transfer_sise: unknown key (did you mean 'workload.transfer_size'?)"
    )
    assert error_of("[nonsense]\nx = 1\n") == "run.toml: nonsense: unknown key"
    assert error_of("[cluster.deadlines]\nrpc = 3\n").startswith(
        "run.toml: cluster.deadlines.rpc: unknown key"
    )


def test_bad_values_name_file_and_dotted_key() -> None:
    assert error_of("[workload]\ntransfer_size = '1MB'\n") == (
        "run.toml: workload.transfer_size: ambiguous size '1MB': write '1m' or '1MiB' "
        "(binary units)"
    )
    assert error_of("[cluster]\ntransport = 'udp'\n") == (
        "run.toml: cluster.transport: Input should be 'auto', 'shm' or 'tcp' (got 'udp')"
    )
    message = error_of("[cluster.deadlines]\nrpc_s = 0\n[workload]\nsegments = 0\n")
    assert "cluster.deadlines.rpc_s: must be above 0 and at most 604800 (got 0)" in message
    assert "run.toml: workload.segments: must be between 1 and 1048576 (got 0)" in message
    assert "block_size (1572864) must be a multiple of transfer_size (1048576)" in error_of(
        "[workload]\nblock_size = '1536k'\n"
    )
    assert "phases must start with 'write'" in error_of("[workload]\nphases = ['read']\n")
    assert "run.toml: output.label: String should match pattern" in error_of(
        "[output]\nlabel = 'a b'\n"
    )


def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    assert error_of("[workload\n").startswith("run.toml: invalid TOML: ")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "absent.toml")


def test_override_precedence() -> None:
    plan = parse_config(SAMPLE, "run.toml")
    overridden = apply_overrides(
        plan,
        {
            "workload.transfer_size": "1m",  # overrides the file
            "workload.repetitions": "3",  # overrides a default
            "workload.verify": "true",
            "workload.phases": "write,read",
            "launcher.mca": "btl=tcp,self_x=1",
        },
    ).base
    assert overridden.workload.transfer_size == 1 << 20
    assert overridden.workload.repetitions == 3
    assert overridden.workload.verify is True
    assert overridden.workload.phases == ["write", "read"]
    assert overridden.launcher.mca == {"btl": "tcp", "self_x": "1"}
    assert overridden.cluster.daemons_per_node == 2  # from the file, untouched
    assert plan.base.workload.transfer_size == 64 << 10  # the plan itself is unchanged


def test_override_errors_name_the_override() -> None:
    plan = load_config(None)
    with pytest.raises(ConfigError) as error:
        apply_overrides(plan, {"workload.transfer_sizes": "1m"})
    assert str(error.value) == (
        "--set workload.transfer_sizes: unknown key (did you mean 'workload.transfer_size'?)"
    )
    with pytest.raises(ConfigError, match=r"--set workload\.transfer_size: bad size 'big'"):
        apply_overrides(plan, {"workload.transfer_size": "big"})
    with pytest.raises(ConfigError, match="--set workload: is a section"):
        apply_overrides(plan, {"workload": "x"})


CHUNK, TRANSFER, TASKS = "cluster.chunk_size", "workload.transfer_size", "workload.tasks_per_node"


def test_sweep_is_a_stable_cartesian_product() -> None:
    plan = parse_config(
        """
[workload]
transfer_size = ["64k", "1m"]
tasks_per_node = [1, 2, 4]
[cluster]
chunk_size = ["1m", "4m"]
""",
        "sweep.toml",
    )
    assert [axis.key for axis in plan.axes] == [
        "cluster.chunk_size",  # daemon settings vary slowest
        "workload.transfer_size",
        "workload.tasks_per_node",
    ]
    points = expand_sweep(plan)
    assert len(points) == 12
    assert [p.index for p in points] == list(range(12))
    assert [
        (p.config.cluster.chunk_size >> 20, p.config.workload.transfer_size >> 10, p.values)
        for p in points[:4]
    ] == [
        (1, 64, {CHUNK: "1m", TRANSFER: "64k", TASKS: 1}),
        (1, 64, {CHUNK: "1m", TRANSFER: "64k", TASKS: 2}),
        (1, 64, {CHUNK: "1m", TRANSFER: "64k", TASKS: 4}),
        (1, 1024, {CHUNK: "1m", TRANSFER: "1m", TASKS: 1}),
    ]
    assert points[0].describe() == (
        "cluster.chunk_size=1m, workload.transfer_size=64k, workload.tasks_per_node=1"
    )
    assert expand_sweep(plan) == points  # stable
    restarts = [needs_daemon_restart(a.config, b.config) for a, b in itertools.pairwise(points)]
    assert restarts.count(True) == 1  # only where chunk_size changes
    assert restarts.index(True) == 5


def test_no_sweep_is_one_point_and_lists_of_lists_sweep_list_keys() -> None:
    plan = load_config(None)
    assert not plan.is_sweep
    assert [p.config for p in expand_sweep(plan)] == [plan.base]
    phases = parse_config("[workload]\nphases = [['write'], ['write', 'read']]\n", "p.toml")
    assert [p.config.workload.phases for p in expand_sweep(phases)] == [
        ["write"],
        ["write", "read"],
    ]
    swept = apply_overrides(plan, {"workload.transfer_size": "64k, 1m"})
    assert [p.config.workload.transfer_size for p in expand_sweep(swept)] == [64 << 10, 1 << 20]


def test_sweep_errors_name_the_value_and_the_point() -> None:
    assert error_of("[workload]\ntransfer_size = ['1m', 'huge']\n").startswith(
        "run.toml: workload.transfer_size[1]: bad size 'huge'"
    )
    assert error_of("[workload]\ntransfer_size = []\n") == (
        "run.toml: workload.transfer_size: empty list: a sweep needs at least one value"
    )
    plan = parse_config(
        "[workload]\ntransfer_size = ['1m', '4m']\nblock_size = ['4m', '2m']\n", "s.toml"
    )
    with pytest.raises(ConfigError) as error:
        expand_sweep(plan)
    assert str(error.value) == (
        "s.toml: sweep point 3 (workload.transfer_size=4m, workload.block_size=2m): workload: "
        "block_size (2097152) must be a multiple of transfer_size (4194304)"
    )


def test_daemon_restart_only_for_daemon_settings() -> None:
    base = RunConfig()
    workload_change = apply_overrides(load_config(None), {"workload.transfer_size": "4k"}).base
    deadline_change = apply_overrides(load_config(None), {"cluster.deadlines.rpc_s": "5"}).base
    durability = apply_overrides(load_config(None), {"cluster.durability": "fsync_on_close"}).base
    launcher = apply_overrides(load_config(None), {"launcher.name": "srun"}).base
    assert not needs_daemon_restart(base, workload_change)
    assert not needs_daemon_restart(base, deadline_change)
    assert needs_daemon_restart(base, durability)
    assert needs_daemon_restart(base, launcher)


def test_posix_targets() -> None:
    config = apply_overrides(load_config(None), {"workload.target": "posix:/mnt/nfs"}).base
    assert config.workload.posix_path == "/mnt/nfs"
    assert RunConfig().workload.posix_path is None
    relative = error_of('[workload]\ntarget = "posix:scratch"\n')
    assert "workload.target" in relative and "posix:scratch" in relative
    deep = error_of('[workload]\ntarget = "posix:/tmp"\nqueue_depth = 16\n')
    assert "queue_depth must be 1" in deep
