"""Slurm node-list expansion, checked against what ``scontrol show hostnames`` prints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchfs.cluster.hostfile import resolve_nodes
from benchfs.cluster.nodelist import expand_slurm_nodelist, parse_tasks_per_node
from benchfs.errors import HostfileError


@pytest.mark.parametrize(
    ("nodelist", "expected"),
    [
        ("node01", ["node01"]),
        ("node[01-03,7],gpu[1-2]", ["node01", "node02", "node03", "node7", "gpu1", "gpu2"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("n[001-2]", ["n001", "n002"]),
        ("n[3]", ["n3"]),
        (
            "rack[1-2]-node[01-02]",
            ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"],
        ),
        ("n[1-2]ib", ["n1ib", "n2ib"]),
        ("[1-2]", ["1", "2"]),
        ("a,b c", ["a", "b", "c"]),
        ("n[2,1],n1", ["n2", "n1", "n1"]),
        ("", []),
    ],
)
def test_expands_like_scontrol(nodelist: str, expected: list[str]) -> None:
    assert expand_slurm_nodelist(nodelist) == expected


@pytest.mark.parametrize(
    ("nodelist", "reason"),
    [
        ("n[1-3", "'[' without ']'"),
        ("n1-3]", "']' without '['"),
        ("n[3-1]", "runs backwards"),
        ("n[a-b]", "bad range"),
        ("n[1-]", "bad range"),
        ("n[[1]]", "nested"),
        ("n[1-9999999]", "exceeds"),
    ],
)
def test_rejects_bad_lists(nodelist: str, reason: str) -> None:
    with pytest.raises(HostfileError) as error:
        expand_slurm_nodelist(nodelist)
    assert repr(nodelist) in str(error.value)
    assert reason in str(error.value)


def test_tasks_per_node() -> None:
    assert parse_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert parse_tasks_per_node("4") == [4]
    with pytest.raises(HostfileError, match="bad entry"):
        parse_tasks_per_node("2(3)")


@st.composite
def ranges(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A bracket body of numbers and ranges, and the names it must give."""
    parts: list[str] = []
    numbers: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        width = draw(st.integers(1, 4))
        low = draw(st.integers(0, 10**width - 1))
        high = draw(st.integers(low, low + 20))
        low_text = f"{low:0{width}d}"
        if draw(st.booleans()):
            parts.append(f"{low_text}-{high}")
            numbers += [f"{value:0{width}d}" for value in range(low, high + 1)]
        else:
            parts.append(low_text)
            numbers.append(low_text)
    return ",".join(parts), numbers


prefixes = st.text(alphabet="abcxyz-", min_size=0, max_size=5)


@given(prefix=prefixes, body=ranges(), suffix=prefixes)
def test_one_bracket_group(prefix: str, body: tuple[str, list[str]], suffix: str) -> None:
    text, numbers = body
    names = expand_slurm_nodelist(f"{prefix}[{text}]{suffix}")
    assert names == [f"{prefix}{number}{suffix}" for number in numbers]


@given(outer=ranges(), inner=ranges())
def test_two_groups_are_a_product_leftmost_slowest(
    outer: tuple[str, list[str]], inner: tuple[str, list[str]]
) -> None:
    names = expand_slurm_nodelist(f"r[{outer[0]}]-n[{inner[0]}]")
    assert names == [f"r{a}-n{b}" for a in outer[1] for b in inner[1]]


@given(st.lists(st.tuples(prefixes.filter(bool), ranges()), min_size=1, max_size=4))
def test_comma_joined_items_concatenate(items: list[tuple[str, tuple[str, list[str]]]]) -> None:
    nodelist = ",".join(f"{prefix}[{body[0]}]" for prefix, body in items)
    expected = [f"{prefix}{n}" for prefix, body in items for n in body[1]]
    assert expand_slurm_nodelist(nodelist) == expected


@pytest.mark.parametrize(
    "nodelist",
    ["n[1-65536]-[1-65536]", "n[1-65536]-[1-5]", ",".join(f"g{i}[1-65536]" for i in range(5))],
    ids=["product", "just-over", "many-items"],
)
def test_a_list_of_too_many_hosts_is_refused_before_expanding(nodelist: str) -> None:
    with pytest.raises(HostfileError, match=r"names more than 262,144 hosts \(the limit\)"):
        expand_slurm_nodelist(nodelist)


def test_a_list_at_the_limit_expands() -> None:
    assert len(expand_slurm_nodelist("n[1-65536]-[1-4]")) == 1 << 18


def test_tasks_per_node_repeating_without_bound_is_refused() -> None:
    with pytest.raises(HostfileError) as error:
        parse_tasks_per_node("1(x999999999999)")
    assert str(error.value) == (
        "SLURM_TASKS_PER_NODE='1(x999999999999)': names more than 262,144 hosts (the limit)"
    )


def test_too_many_local_nodes_are_refused() -> None:
    with pytest.raises(HostfileError, match="local cluster of 100000 nodes: at most 256"):
        resolve_nodes("local:100000")
