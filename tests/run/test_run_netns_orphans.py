"""A `benchfs run` across hosts whose orchestrator is SIGKILLed: mpirun's
daemons on the other hosts take the run's daemons and ranks down with it,
and `benchfs clean` sweeps every host through the run's own launcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster.proc_helpers import alive
from launchers.netns_hosts import NamespaceHosts
from run_helpers import (
    ROOT_ENV,
    assert_nothing_left,
    environment,
    manifest,
    processes_mentioning,
    run_dirs,
    running_phase,
    wait_for,
)

from benchfs.cluster.hostfile import format_hostfile


def toml_table(name: str, values: dict[str, str]) -> str:
    return f"[{name}]\n" + "".join(f'{key} = "{value}"\n' for key, value in values.items())


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killed_orchestrator_takes_remote_daemons_and_ranks_down_and_clean_sweeps_hosts(
    three_namespace_hosts: NamespaceHosts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ROOT_ENV.items():
        monkeypatch.setenv(key, value)
    own_tmp = tmp_path / "tmp"  # this test's run records only
    own_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(own_tmp))
    hosts = three_namespace_hosts.hosts
    hostfile = tmp_path / "hosts"
    hostfile.write_text(format_hostfile(hosts))
    config = tmp_path / "run.toml"
    config.write_text(
        '[launcher]\nname = "mpirun"\n\n' + toml_table("launcher.mca", three_namespace_hosts.mca())
    )
    args = [
        "--config", str(config), "--nodes", str(hostfile),
        "--set", "cluster.transport=tcp",
        "--set", f"cluster.data_dir={tmp_path / 'data'}",
        "--set", "cluster.chunk_size=256k", "--set", "cluster.buffer_pool_size=16m",
        "--set", "workload.transfer_size=4k", "--set", "workload.block_size=1m",
        "--set", "workload.stonewall_s=0", "--set", "workload.repetitions=100000",
        "--set", "preflight.enabled=false",
        "--set", f"output.results_dir={tmp_path / 'results'}",
    ]  # fmt: skip
    with running_phase(tmp_path, args) as run:
        daemons = run.pids("g0/registry/*.json")
        ranks = run.pids("p0/ranks/*.json")
        assert len(daemons) == 3 and len(ranks) >= 3, (daemons, ranks)
        os.kill(run.process.pid, signal.SIGKILL)
        run.process.wait()
        wait_for(
            lambda: not [pid for pid in daemons + ranks if alive(pid)],
            "the remote daemons and ranks to die with their orchestrator",
            timeout=60,
        )
        wait_for(lambda: not processes_mentioning(run.token), "every process of the run to end")

    data = sorted((tmp_path / "data").glob(f"benchfs-{run.token}-g*"))
    assert data, "the hosts' data directories stay until cleaned"
    done = subprocess.run(
        [sys.executable, "-m", "benchfs", "clean"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "swept 3 hosts" in done.stdout, done.stdout
    hosts = [line for line in done.stdout.splitlines() if "shared-memory files" in line]
    assert len(hosts) == 3, done.stdout  # one line from each host's helper
    assert sum(int(line.split("removed ")[1].split()[0]) for line in hosts) >= len(data)
    assert not any(path.exists() for path in data)
    (run_dir,) = run_dirs(tmp_path / "results")
    assert manifest(run_dir)["status"] == "aborted"
    assert_nothing_left(tmp_path, run.token, daemons + ranks)
