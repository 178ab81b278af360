"""Placement from Python: the pinned values, and the balance of real name sets.

Balance is max/mean of chunks per node. The chunks of one file walk round
robin over the nodes from a hashed start, so only remainders (and
single-chunk files) are left to the hash; a byte-sum hash with modulo put
the first chunks of all of IOR's files on the same two nodes.
"""

from __future__ import annotations

import random

import pytest

import benchfs_native as bn


def balance(loads: list[int]) -> float:
    return max(loads) / (sum(loads) / len(loads))


def random_names(rng: random.Random, count: int) -> list[str]:
    return [f"d{rng.randrange(100)}/run-{rng.getrandbits(64):016x}.dat" for _ in range(count)]


def test_pinned_owners_match_the_engine() -> None:
    # Pinned in docs/PLACEMENT.md and the Rust unit tests.
    assert [bn.metadata_owner(f"testfile.{i}", 16) for i in range(8)] == [
        10,
        0,
        15,
        7,
        12,
        2,
        12,
        11,
    ]
    assert bn.placement_owner("testfile.0", 7, 16) == 1
    for i in range(20):
        path = f"x/y{i}"
        assert bn.placement_owner(path, 0, 5) == bn.metadata_owner(path, 5)
        start = bn.metadata_owner(path, 5)
        assert [bn.placement_owner(path, k, 5) for k in range(10)] == [
            (start + k) % 5 for k in range(10)
        ]


def test_chunk_loads_counts_every_chunk() -> None:
    files = [(f"f{i}", i % 7 + 1) for i in range(50)]
    loads = bn.chunk_loads(files, 6)
    by_hand = [0] * 6
    for path, chunks in files:
        for k in range(chunks):
            by_hand[bn.placement_owner(path, k, 6)] += 1
    assert loads == by_hand
    assert bn.chunk_loads([], 3) == [0, 0, 0]


@pytest.mark.parametrize("nodes", [0, -1, 2**21])
def test_bad_node_counts_are_value_errors(nodes: int) -> None:
    with pytest.raises(ValueError, match="nodes"):
        bn.metadata_owner("a", nodes)
    with pytest.raises(ValueError, match="nodes"):
        bn.placement_owner("a", 0, nodes)
    with pytest.raises(ValueError, match="nodes"):
        bn.chunk_loads([("a", 1)], nodes)


def test_million_chunks_of_random_files_on_64_nodes() -> None:
    rng = random.Random(20261122)
    files: list[tuple[str, int]] = []
    total = 0
    while total < 1_000_000:
        chunks = min(rng.randint(1, 200), 1_000_000 - total)
        files.append((f"d{rng.randrange(100)}/run-{rng.getrandbits(64):016x}.dat", chunks))
        total += chunks
    loads = bn.chunk_loads(files, 64)
    assert sum(loads) == 1_000_000
    figure = balance(loads)
    print(f"1,000,000 chunks of {len(files)} random files on 64 nodes: max/mean {figure:.4f}")
    assert figure <= 1.02


def test_ior_file_per_process_on_16_nodes() -> None:
    # 736 files as in the field report, 100 chunks each (not a multiple of 16).
    files = [(f"testfile.{i:08}", 100) for i in range(736)]
    loads = bn.chunk_loads(files, 16)
    figure = balance(loads)
    print(f"IOR file per process, 736 files x 100 chunks on 16 nodes: max/mean {figure:.4f}")
    assert figure <= 1.02
    # The first chunks of all files are spread too (not on 2 of 16 nodes).
    first = bn.chunk_loads([(name, 1) for name, _ in files], 16)
    assert min(first) > 0
    assert balance(first) <= 1.5


def test_single_chunk_files_meet_the_balls_into_bins_bound() -> None:
    # One chunk per file: pure hashing, n = 1e6 balls into 64 bins. The
    # expected maximum is about mean + sqrt(2 mean ln 64) = mean * 1.023.
    rng = random.Random(7)
    files = [(name, 1) for name in random_names(rng, 1_000_000)]
    loads = bn.chunk_loads(files, 64)
    figure = balance(loads)
    print(f"1,000,000 single-chunk random files on 64 nodes: max/mean {figure:.4f}")
    assert figure <= 1.04
