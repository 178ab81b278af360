"""Hostfile parsing (OpenMPI, MPICH, plain), scheduler environments, --nodes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchfs.cluster.hostfile import (
    DEFAULT_LOCAL_NODES,
    Host,
    format_hostfile,
    hosts_from_environment,
    local_hosts,
    parse_hostfile,
    parse_hostfile_text,
    resolve_nodes,
)
from benchfs.errors import HostfileError


def test_all_formats_comments_and_blank_lines() -> None:
    text = """# cluster of the week
node01 slots=4
node02 slots=2 max_slots=8   # trailing comment

node03:3
node04
"""
    text += "\t10.0.0.5 \t\n"
    assert parse_hostfile_text(text, "hosts") == [
        Host("node01", 4),
        Host("node02", 2),
        Host("node03", 3),
        Host("node04", 1),
        Host("10.0.0.5", 1),
    ]


def test_repeated_hosts_add_slots_at_first_position() -> None:
    text = "a slots=2\nb\na:3\nb\n"
    assert parse_hostfile_text(text, "h") == [Host("a", 5), Host("b", 2)]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("good\nbad slots=0\n", 2, "slots must be a positive integer, got '0'"),
        ("n slots=x\n", 1, "slots must be a positive integer"),
        ("n:0\n", 1, "slot count must be a positive integer"),
        ("n:\n", 1, "slot count must be a positive integer"),
        ("n:2 slots=3\n", 1, "MPICH form"),
        ("n slots=2 slots=3\n", 1, "slots given twice"),
        ("n slots=4 max_slots=2\n", 1, "max_slots=2 is below slots=4"),
        ("n colour=blue\n", 1, "unknown hostfile option 'colour'"),
        ("n 4\n", 1, "expected key=value"),
        ("\n\n-bad\n", 3, "invalid host name '-bad'"),
        ("fe80::1\n", 1, "slot count"),
    ],
)
def test_bad_lines_name_file_and_line(text: str, line: int, reason: str) -> None:
    with pytest.raises(HostfileError) as error:
        parse_hostfile_text(text, "cluster.hosts")
    assert str(error.value).startswith(f"cluster.hosts:{line}: ")
    assert reason in str(error.value)


def test_host_checks_its_fields() -> None:
    with pytest.raises(HostfileError, match="n1: slots must be at least 1, got 0"):
        Host("n1", 0)
    with pytest.raises(HostfileError, match="host name is empty"):
        Host("")


def test_empty_hostfile_is_an_error() -> None:
    with pytest.raises(HostfileError, match="h: no hosts"):
        parse_hostfile_text("# nothing\n\n", "h")


def test_parse_hostfile_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("x slots=2\ny:1\n")
    assert parse_hostfile(path) == [Host("x", 2), Host("y", 1)]
    with pytest.raises(HostfileError, match=f"{tmp_path / 'missing'}: cannot read"):
        parse_hostfile(tmp_path / "missing")


names = st.from_regex(r"\A[a-z][a-z0-9\-]{0,10}[a-z0-9]\Z")
hosts = st.lists(
    st.builds(Host, name=names, slots=st.integers(1, 512)), unique_by=lambda h: h.name, min_size=1
)


@given(hosts)
def test_round_trip_openmpi_form(generated: list[Host]) -> None:
    assert parse_hostfile_text(format_hostfile(generated), "gen") == generated


@given(hosts, st.data())
def test_round_trip_mixed_forms(generated: list[Host], data: st.DataObject) -> None:
    lines = []
    for host in generated:
        style = data.draw(st.sampled_from(["openmpi", "mpich", "plain", "comment"]))
        if style == "openmpi":
            lines.append(f"{host.name} slots={host.slots} max_slots={host.slots + 1}")
        elif style == "mpich":
            lines.append(f"{host.name}:{host.slots}")
        elif style == "comment":
            lines += ["# a comment", "", f"  {host.name} slots={host.slots}  # why"]
        else:  # a plain list names a host once per slot
            lines += [host.name] * host.slots
    assert parse_hostfile_text("\n".join(lines), "gen") == generated


def test_slurm_environment() -> None:
    env = {"SLURM_JOB_NODELIST": "node[01-03],gpu7", "SLURM_TASKS_PER_NODE": "2(x3),1"}
    assert hosts_from_environment("slurm", env) == [
        Host("node01", 2),
        Host("node02", 2),
        Host("node03", 2),
        Host("gpu7", 1),
    ]
    env = {"SLURM_NODELIST": "n[1-2]", "SLURM_NTASKS_PER_NODE": "8"}
    assert hosts_from_environment("slurm", env) == [Host("n1", 8), Host("n2", 8)]
    assert hosts_from_environment("slurm", {"SLURM_JOB_NODELIST": "n1"}) == [Host("n1", 1)]


def test_slurm_environment_errors() -> None:
    with pytest.raises(HostfileError, match="SLURM_JOB_NODELIST is not set"):
        hosts_from_environment("slurm", {})
    with pytest.raises(HostfileError, match="gives 2 counts for 3 hosts"):
        hosts_from_environment(
            "slurm", {"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_TASKS_PER_NODE": "1(x2)"}
        )


def test_pbs_nodefile_repeats_are_slots(tmp_path: Path) -> None:
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("c1\nc1\nc1\nc2\nc2\nc3\n")
    env = {"PBS_NODEFILE": str(nodefile)}
    assert hosts_from_environment("pbs", env) == [Host("c1", 3), Host("c2", 2), Host("c3", 1)]
    assert resolve_nodes("pbs", env) == [Host("c1", 3), Host("c2", 2), Host("c3", 1)]
    with pytest.raises(HostfileError, match="PBS_NODEFILE is not set"):
        hosts_from_environment("pbs", {})


def test_resolve_nodes(tmp_path: Path) -> None:
    assert resolve_nodes(None, {}) == local_hosts(DEFAULT_LOCAL_NODES)
    assert resolve_nodes(None, {}, local_nodes=2) == [Host("local0"), Host("local1")]
    assert resolve_nodes("local:3", {}) == [Host("local0"), Host("local1"), Host("local2")]
    assert resolve_nodes("slurm", {"SLURM_JOB_NODELIST": "a[1-2]"}) == [Host("a1"), Host("a2")]
    path = tmp_path / "hosts"
    path.write_text("h1:2\n")
    assert resolve_nodes(str(path), {}) == [Host("h1", 2)]
    with pytest.raises(HostfileError, match="no such hostfile"):
        resolve_nodes(str(tmp_path / "nope"), {})
    with pytest.raises(HostfileError, match="local node count must be a positive integer"):
        resolve_nodes("local:0", {})
