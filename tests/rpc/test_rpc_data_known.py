"""What a file's home knows of its data, against four real daemons: a stat
or unlink of a never-written file asks one daemon, and every way data
comes to a file (a write, another client's write, a truncate, an engine
phase, through a renamed or a second name) is seen by every later stat
(docs/NAMESPACE.md, "File data, placed by id")."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import CHUNK, NODES, Cluster
from namespace_files import backing_files, home, owned_by, payload, read_file, write_file

import benchfs_native as bn

pytestmark = pytest.mark.timeout(180)


def rpcs_of(c: bn.Client, op: Callable[[str], object], path: str) -> int:
    """The RPCs ``op(path)`` made."""
    before = c.counters()["rpcs"]
    op(path)
    return c.counters()["rpcs"] - before


def test_a_never_written_file_costs_one_daemon(cluster: Cluster) -> None:
    top = f"known-empty-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        c.close(c.create(f"{top}/empty"))
        assert rpcs_of(c, c.stat, f"{top}/empty") == 1
        attr = c.stat(f"{top}/empty")
        assert (attr["size"], attr["blocks"]) == (0, 0)
        assert backing_files(cluster, attr["ino"]) == []
        # The unlink, and the parent's stamp when another daemon holds the
        # parent; no data daemon.
        parent_owner = bn.metadata_owner(top, NODES)
        for same in (True, False):
            owner = parent_owner if same else (parent_owner + 1) % NODES
            name = owned_by(top, owner, NODES, stem="e")
            c.close(c.create(name))
            mtime = c.stat(top)["mtime_unix_ns"]
            assert rpcs_of(c, c.unlink, name) == (1 if same else 2)
            with pytest.raises(FileNotFoundError):
                c.stat(name)
            assert c.stat(top)["mtime_unix_ns"] > mtime, "the parent's times are stamped"
        c.unlink(f"{top}/empty")
        # A written file's size is every daemon's.
        write_file(c, f"{top}/full", b"x")
        assert rpcs_of(c, c.stat, f"{top}/full") == 1 + NODES
        # A write of no bytes makes no data.
        h = c.create(f"{top}/nothing")
        c.write(h, 0, b"")
        c.close(h)
        assert rpcs_of(c, c.stat, f"{top}/nothing") == 1


def test_another_clients_write_and_truncate_are_seen(cluster: Cluster) -> None:
    top = f"known-others-{cluster.transport}"
    data = payload(1, 3 * CHUNK + 7)
    with cluster.client(name="writer") as w, cluster.client(name="reader") as r:
        w.mkdir(top)
        for name in ("a", "b"):
            w.close(w.create(f"{top}/{name}"))
            assert r.stat(f"{top}/{name}")["size"] == 0
        h = w.open(f"{top}/a")
        w.write(h, 0, data)
        w.close(h)
        assert r.stat(f"{top}/a")["size"] == len(data)
        assert read_file(r, f"{top}/a") == data
        # A truncate that makes a size on a file never written.
        w.truncate(f"{top}/b", 10)
        assert r.stat(f"{top}/b")["size"] == 10
        assert read_file(r, f"{top}/b") == bytes(10)
        w.setattr(f"{top}/b", size=CHUNK + 1)
        assert r.stat(f"{top}/b")["size"] == CHUNK + 1
        # The unlink of a written file takes its data from every daemon.
        ino = r.stat(f"{top}/a")["ino"]
        assert backing_files(cluster, ino) != []
        r.unlink(f"{top}/a")
        assert backing_files(cluster, ino) == []


def test_an_engine_phase_write_is_seen(cluster: Cluster) -> None:
    top = f"known-phase-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        r = c.run_phase(
            phase="write", file_name=f"{top}/ior", transfer_size=CHUNK, block_size=4 * CHUNK
        )
        assert r["bytes"] == 4 * CHUNK
    with cluster.client() as other:
        assert other.stat(f"{top}/ior.00000000")["size"] == 4 * CHUNK


@pytest.mark.parametrize("write_when", ["before", "after"])
def test_renames_away_from_the_home_and_back_keep_the_size(
    cluster: Cluster, write_when: str
) -> None:
    top = f"known-rename-{write_when}-{cluster.transport}"
    data = payload(2, 2 * CHUNK + 3)
    with cluster.client() as c:
        c.mkdir(top)
        first = owned_by(top, 0, NODES)
        c.close(c.create(first))
        ino = c.stat(first)["ino"]
        assert home(ino) == 0
        h = c.open(first)
        if write_when == "before":
            c.write(h, 0, data)
        away = owned_by(top, 1, NODES)
        c.rename(first, away)
        if write_when == "after":
            # The open handle writes after the name moved off the home.
            c.write(h, 0, data)
        c.close(h)
        assert c.stat(away)["size"] == len(data)
        # Back on a name the home holds: the home still knows of the data.
        back = owned_by(top, 0, NODES, stem="back")
        c.rename(away, back)
        assert rpcs_of(c, c.stat, back) == 1 + NODES
        assert c.stat(back)["size"] == len(data)
        assert read_file(c, back) == data
        c.unlink(back)
        assert backing_files(cluster, ino) == []


def test_a_second_names_write_is_seen_through_the_first(cluster: Cluster) -> None:
    top = f"known-link-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        c.close(c.create(f"{top}/one"))
        c.link(f"{top}/one", f"{top}/two")
        h = c.open(f"{top}/two")
        c.write(h, 0, b"through the second name")
        c.close(h)
        assert c.stat(f"{top}/one")["size"] == len(b"through the second name")
        c.unlink(f"{top}/two")
        assert c.stat(f"{top}/one")["size"] == len(b"through the second name")
