"""Exact command lines of every launcher, and the registry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from benchfs.cluster.hostfile import Host
from benchfs.config import LauncherConfig
from benchfs.errors import LaunchError
from benchfs.launchers import (
    Capabilities,
    Launcher,
    LocalLauncher,
    MpirunLauncher,
    SrunLauncher,
    get_launcher,
    launcher_for,
    launcher_name_for,
    launcher_names,
    register_launcher,
)
from benchfs.launchers.mpirun import SESSION_BASE_VARIABLE, mpich_library_dir
from benchfs.launchers.select import launcher_name_in

A, B = Host("a", 2), Host("b", 3)
ARGV = ["prog", "--flag", "x y"]
ENV = {"UCX_TLS": "tcp", "BENCHFS_NODE": "a"}


def test_registry_knows_builtins() -> None:
    assert {"local", "mpirun", "srun"} <= set(launcher_names())
    assert isinstance(get_launcher("local"), LocalLauncher)
    launcher = get_launcher("mpirun", flavour="mpich")
    assert isinstance(launcher, MpirunLauncher)
    assert launcher.flavour == "mpich"
    with pytest.raises(LaunchError, match=r"unknown launcher 'ssh'; known: .*local"):
        get_launcher("ssh")
    with pytest.raises(LaunchError, match="launcher 'srun': bad options"):
        get_launcher("srun", colour="blue")


def test_register_a_new_launcher() -> None:
    @register_launcher
    class EchoLauncher(Launcher):
        name = "echo-test"

        def command(
            self, host: Host, argv: Sequence[str], *, env: Mapping[str, str] | None = None
        ) -> list[str]:
            return ["echo", host.name, *argv]

        def ranks_command(
            self,
            hosts: Sequence[Host],
            ranks_per_host: int | None,
            argv: Sequence[str],
            *,
            env: Mapping[str, str] | None = None,
        ) -> list[str]:
            return ["echo", *argv]

    assert get_launcher("echo-test").command(A, ["x"]) == ["echo", "a", "x"]
    with pytest.raises(ValueError, match="already registered"):
        register_launcher(type("Other", (EchoLauncher,), {"name": "echo-test"}))


def test_local_command() -> None:
    local = LocalLauncher(allow_run_as_root=False)
    assert local.command(A, ARGV) == ARGV
    assert local.command(A, ARGV, env=ENV) == ["env", "UCX_TLS=tcp", "BENCHFS_NODE=a", *ARGV]
    assert local.ranks_command([A, B], 2, ARGV, env={"X": "1"}) == [
        "mpirun", "--oversubscribe", "-np", "4", "-x", "X=1", *ARGV,
    ]  # fmt: skip
    assert local.ranks_command([A, B], None, ARGV)[:4] == ["mpirun", "--oversubscribe", "-np", "5"]
    assert LocalLauncher(allow_run_as_root=True).ranks_command([A], 1, ARGV)[:2] == [
        "mpirun",
        "--allow-run-as-root",
    ]


def test_openmpi_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SESSION_BASE_VARIABLE, raising=False)
    mpirun = MpirunLauncher(
        mca={"plm_rsh_agent": "/bin/agent", "btl": "tcp,self"},
        extra_args=["--bind-to", "none"],
        allow_run_as_root=False,
    )
    assert mpirun.ranks_command([A, B], 4, ARGV, env=ENV) == [
        "mpirun",
        "--mca", "plm_rsh_agent", "/bin/agent",
        "--mca", "btl", "tcp,self",
        "--bind-to", "none",
        "-np", "8", "-H", "a:4,b:4", "--map-by", "slot",
        "-x", "UCX_TLS=tcp", "-x", "BENCHFS_NODE=a",
        *ARGV,
    ]  # fmt: skip
    assert MpirunLauncher(allow_run_as_root=False).ranks_command([A, B], None, ARGV) == [
        "mpirun", "-np", "5", "-H", "a:2,b:3", "--map-by", "slot", *ARGV,
    ]  # fmt: skip
    assert MpirunLauncher(allow_run_as_root=True, executable="/opt/mpirun").command(B, ARGV) == [
        "/opt/mpirun", "--allow-run-as-root", "-np", "1", "-H", "b:1", "--map-by", "slot", *ARGV,
    ]  # fmt: skip


def test_one_host_commands_under_a_run_s_session_base_get_one_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenMPI's one-host jobs run side by side on one base race to make and
    remove its ``ompi.<host>.<uid>``: each host's gets a directory of its own
    under the run's base; a job of ranks, and a base the user chose, do not."""
    monkeypatch.setenv(SESSION_BASE_VARIABLE, "/tmp/run-mpi")
    launcher = MpirunLauncher(allow_run_as_root=False)
    bases = {}
    for host in (A, B):
        argv = launcher.command(host, ARGV)
        assert argv[:3] == ["mpirun", "--mca", "orte_tmpdir_base"], argv
        assert argv[4:] == ["-np", "1", "-H", f"{host.name}:1", "--map-by", "slot", *ARGV]
        bases[host.name] = argv[3]
    assert bases["a"] != bases["b"]
    assert all(base.startswith("/tmp/run-mpi/h-") and len(base) == 23 for base in bases.values())
    assert "orte_tmpdir_base" not in launcher.ranks_command([A, B], None, ARGV)
    chosen = MpirunLauncher(allow_run_as_root=False, mca={"orte_tmpdir_base": "/mine"})
    assert chosen.command(A, ARGV)[:4] == ["mpirun", "--mca", "orte_tmpdir_base", "/mine"]
    assert "orte_tmpdir_base" not in MpirunLauncher(flavour="mpich").command(A, ARGV)
    monkeypatch.delenv(SESSION_BASE_VARIABLE)
    assert "orte_tmpdir_base" not in launcher.command(A, ARGV)


ABI = ["-genv", "MPI4PY_MPIABI", "mpich"]


def test_mpich_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    mpich = MpirunLauncher(flavour="mpich")
    assert mpich.ranks_command([A, B], 2, ARGV, env={"X": "1 2"}) == [
        "mpiexec", "-hosts", "a,b", "-ppn", "2", "-n", "4", *ABI, "-genv", "X", "1 2", *ARGV,
    ]  # fmt: skip
    assert mpich.ranks_command([A, B], None, ARGV) == [
        "mpiexec", "-hosts", "a:2,b:3", "-n", "5", *ABI, *ARGV,
    ]  # fmt: skip
    assert mpich.command(A, ARGV) == [
        "mpiexec", "-hosts", "a", "-ppn", "1", "-n", "1", *ABI, *ARGV,
    ]  # fmt: skip
    # MPICH's library under the name mpi4py asks for goes first on the ranks' library path.
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/lib")
    with_library = MpirunLauncher(flavour="mpich", library_dir="/venv/lib/mpich")
    assert with_library.ranks_on_this_host(1, ARGV) == [
        "mpiexec", "-n", "1", *ABI, "-genv", "LD_LIBRARY_PATH", "/venv/lib/mpich:/opt/lib", *ARGV,
    ]  # fmt: skip
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert with_library.env_options(None)[-3:] == ["-genv", "LD_LIBRARY_PATH", "/venv/lib/mpich"]
    with pytest.raises(LaunchError, match="MCA parameters apply only to the openmpi flavour"):
        MpirunLauncher(flavour="mpich", mca={"btl": "self"})
    with pytest.raises(LaunchError, match="flavour must be"):
        MpirunLauncher(flavour="intel")  # type: ignore[arg-type]


def test_mpich_network_interface_is_hydras_iface() -> None:
    # The interface whose address Hydra's proxies on other hosts connect back to.
    mpich = MpirunLauncher(flavour="mpich", network_interface="ib0", extra_args=["-v"])
    assert mpich.command(A, ARGV) == [
        "mpiexec", "-iface", "ib0", "-v", "-hosts", "a", "-ppn", "1", "-n", "1", *ABI, *ARGV,
    ]  # fmt: skip
    with pytest.raises(LaunchError, match="network_interface applies only to the mpich flavour"):
        MpirunLauncher(flavour="openmpi", network_interface="ib0")
    # From the config, checked against this machine's interfaces before anything starts.
    settings = LauncherConfig(
        name="mpirun", flavour="mpich", executable="/opt/mpiexec", network_interface="lo"
    )
    assert launcher_for(settings, "hosts.txt").command(A, ["x"])[:3] == [
        "/opt/mpiexec",
        "-iface",
        "lo",
    ]
    missing = LauncherConfig(name="mpirun", flavour="mpich", network_interface="bfsnosuch0")
    with pytest.raises(LaunchError, match="has no network interface 'bfsnosuch0'"):
        launcher_for(missing, "hosts.txt")
    with pytest.raises(ValueError, match="network_interface"):
        LauncherConfig(network_interface="eth0 -verbose")


def test_only_hydra_has_a_line_after_which_its_job_never_ends() -> None:
    # Hydra 4.0.2's proxies print these and exit; mpiexec waits for them forever.
    said = [
        '[proxy:0:2@n2] HYDU_sock_connect (utils/sock/sock.c:141): unable to connect from "n2"'
        ' to "login" (Connection refused)',
        "[proxy:0:2@n2] main (pm/pmiserv/pmip.c:149): unable to connect to server login at"
        " port 36145 (check for firewalls!)",
        "a rank: unable to connect to server db1",  # not Hydra's: the job goes on
    ]
    stuck = MpirunLauncher(flavour="mpich").stuck_output()
    assert stuck is not None
    assert [bool(stuck.pattern.search(line)) for line in said] == [False, True, False]
    assert "launcher.network_interface must name" in stuck.advice
    chosen = MpirunLauncher(flavour="mpich", network_interface="ib0").stuck_output()
    assert chosen is not None and chosen.advice.endswith("(now 'ib0')")
    # The others exit by themselves when their job cannot start.
    assert MpirunLauncher().stuck_output() is None
    assert SrunLauncher().stuck_output() is None
    assert LocalLauncher().stuck_output() is None


def test_srun_commands() -> None:
    srun = SrunLauncher()
    assert srun.command(A, ARGV, env=ENV) == [
        "srun", "--overlap", "--quit-on-interrupt", "-w", "a", "-N1", "-n1",
        "--export=ALL,UCX_TLS=tcp,BENCHFS_NODE=a", *ARGV,
    ]  # fmt: skip
    assert srun.ranks_command([A, B], 2, ARGV) == [
        "srun", "--overlap", "--mpi=pmix", "-w", "a,b", "-N2", "-n4", "--ntasks-per-node=2",
        *ARGV,
    ]  # fmt: skip
    # An --mpi of the site's in extra_args comes after benchfs's, and srun takes the last.
    assert SrunLauncher(overlap=False, extra_args=["--mpi=pmi2"]).ranks_command(
        [A, B], None, ARGV
    ) == [
        "srun", "--mpi=pmix", "--mpi=pmi2", "-w", "a,a,b,b,b", "-N2", "-n5",
        "--distribution=arbitrary", *ARGV,
    ]  # fmt: skip
    # srun splits --export on commas: such a value is set by env on the node.
    assert srun.command(A, ARGV, env={"UCX_TLS": "rc,sm,self", "BENCHFS_NODE": "a"})[7:] == [
        "--export=ALL,BENCHFS_NODE=a", "env", "UCX_TLS=rc,sm,self", *ARGV,
    ]  # fmt: skip
    assert srun.ranks_command([A], 1, ARGV, env={"UCX_TLS": "tcp,self"})[-len(ARGV) - 2 :] == [
        "env", "UCX_TLS=tcp,self", *ARGV,
    ]  # fmt: skip
    assert "--export" not in " ".join(srun.ranks_command([A], 1, ARGV, env={"X": "a,b"}))


@pytest.mark.parametrize("launcher", [LocalLauncher(), MpirunLauncher(), SrunLauncher()])
def test_bad_inputs_are_launch_errors(launcher: Launcher) -> None:
    with pytest.raises(LaunchError, match="argv is empty"):
        launcher.command(A, [])
    with pytest.raises(LaunchError, match="not the string"):
        launcher.command(A, "prog --flag")
    with pytest.raises(LaunchError, match="invalid environment variable name '-x'"):
        launcher.command(A, ARGV, env={"-x": "1"})
    with pytest.raises(LaunchError, match="empty host list"):
        launcher.ranks_command([], 1, ARGV)
    with pytest.raises(LaunchError, match="at least 1, got 0"):
        launcher.ranks_command([A], 0, ARGV)


@pytest.mark.parametrize(
    ("name", "spec", "chosen"),
    [
        ("auto", None, "local"),
        ("auto", "local:3", "local"),
        ("auto", "slurm", "srun"),
        ("auto", "pbs", "mpirun"),
        ("auto", "hosts.txt", "mpirun"),
        ("srun", "hosts.txt", "srun"),
        ("local", None, "local"),
    ],
)
def test_launcher_choice(name: str, spec: str | None, chosen: str) -> None:
    settings = LauncherConfig(name=name)
    assert launcher_name_for(settings, spec) == chosen
    assert launcher_for(settings, spec).name == chosen


@pytest.mark.parametrize(
    ("spec", "environ", "chosen"),
    [
        (None, {"SLURM_JOB_ID": "7"}, "local"),
        ("local:3", {}, "local"),
        ("hosts.txt", {}, "mpirun"),
        ("hosts.txt", {"SLURM_JOB_ID": "7"}, "srun"),
    ],
)
def test_diagnose_s_default_launcher(
    spec: str | None, environ: dict[str, str], chosen: str
) -> None:
    assert launcher_name_in(spec, environ) == chosen


@pytest.mark.parametrize("name", ["mpirun", "srun"])
@pytest.mark.parametrize("spec", [None, "local:3"])
def test_a_host_launcher_on_the_embedded_cluster_is_refused(name: str, spec: str | None) -> None:
    # Its nodes local0, ... are no hosts: ssh fails on them, Hydra waits forever.
    with pytest.raises(LaunchError, match=rf"launcher.name = '{name}' .* give --nodes HOSTFILE"):
        launcher_for(LauncherConfig(name=name, flavour="openmpi"), spec)


def test_launcher_from_config_section() -> None:
    settings = LauncherConfig(
        name="mpirun", flavour="openmpi", mca={"btl": "tcp,self"}, extra_args=["--bind-to", "none"]
    )
    launcher = launcher_for(settings, "hosts.txt")
    assert isinstance(launcher, MpirunLauncher)
    command = launcher.ranks_command([A], 1, ["x"])
    assert command[command.index("--mca") :] == [
        "--mca", "btl", "tcp,self", "--bind-to", "none",
        "-np", "1", "-H", "a:1", "--map-by", "slot", "x",
    ]  # fmt: skip
    mpich = launcher_for(LauncherConfig(name="mpirun", flavour="mpich"), "hosts.txt")
    assert isinstance(mpich, MpirunLauncher)
    assert mpich.library_dir == mpich_library_dir()
    srun = launcher_for(LauncherConfig(name="srun", executable="/opt/srun"), "slurm")
    assert srun.command(A, ["x"]) == [
        "/opt/srun", "--overlap", "--quit-on-interrupt", "-w", "a", "-N1", "-n1", "x",
    ]  # fmt: skip


def test_capabilities_say_what_a_launcher_can_do() -> None:
    local, mpirun, srun = LocalLauncher(), MpirunLauncher(), SrunLauncher()
    assert local.capabilities == Capabilities(
        runs_here=True, needs_host_helper=False, inherits_environment=True
    )
    assert not mpirun.capabilities.runs_here and mpirun.capabilities.needs_host_helper
    assert mpirun.capabilities.ranks_here and not srun.capabilities.ranks_here
    assert srun.capabilities.needs_host_helper and not srun.capabilities.inherits_environment


def test_local_ranks_go_through_the_launcher_that_can_start_them_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    assert MpirunLauncher(flavour="mpich").ranks_on_this_host(3, ["x"], env={"A": "1"}) == [
        "mpiexec", "-n", "3", *ABI, "-genv", "A", "1", "x",
    ]  # fmt: skip
    hydra = LocalLauncher(mpirun="/usr/bin/mpiexec.hydra", flavour="mpich", library_dir="/l")
    assert hydra.ranks_command([A], 1, ["x"]) == [
        "/usr/bin/mpiexec.hydra", "-n", "1", *ABI, "-genv", "LD_LIBRARY_PATH", "/l", "x",
    ]  # fmt: skip
    local = launcher_for(LauncherConfig(flavour="mpich", executable="/opt/bin/mpiexec"), None)
    assert isinstance(local, LocalLauncher) and local.flavour == "mpich"
    assert local.ranks_command([A], 1, ["x"])[:2] == ["/opt/bin/mpiexec", "-n"]
    assert LocalLauncher().ranks_command([A], 1, ["x"])[0] == "mpirun"
    with pytest.raises(LaunchError, match="'srun' cannot start ranks on this machine"):
        LocalLauncher(ranks_through="srun").ranks_command([A], 1, ARGV)
    with pytest.raises(LaunchError, match="cannot start ranks on this machine"):
        SrunLauncher().ranks_on_this_host(1, ARGV)


@pytest.mark.parametrize("launcher", ["local", "mpirun"])
def test_unset_mpich_executable_is_hydra_by_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: str
) -> None:
    # With both MPIs installed, plain mpiexec is OpenMPI's (Debian's alternatives).
    monkeypatch.setenv("PATH", str(tmp_path))
    settings = LauncherConfig(name=launcher, flavour="mpich")
    nodes = None if launcher == "local" else "hosts"
    found = []
    for name in ("mpiexec", "mpiexec.mpich", "mpiexec.hydra"):
        program = tmp_path / name
        program.write_text("#!/bin/sh\n")
        program.chmod(0o700)
        found.append(launcher_for(settings, nodes).ranks_command([A], 1, ["x"])[0])
    assert found == ["mpiexec", "mpiexec.mpich", "mpiexec.hydra"]
    (tmp_path / "mpiexec.hydra").unlink()
    (tmp_path / "mpiexec.mpich").unlink()
    assert launcher_for(settings, nodes).ranks_command([A], 1, ["x"])[0] == "mpiexec"
    # OpenMPI keeps plain mpirun.
    openmpi = LauncherConfig(name=launcher, flavour="openmpi")
    assert launcher_for(openmpi, nodes).ranks_command([A], 1, ["x"])[0] == "mpirun"
