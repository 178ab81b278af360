"""Hard links against four real daemons: a second name record of a file's id, the
link count on the id's home daemon, the data removed with the last name only, every
errno, and failed links that leave nothing behind (docs/NAMESPACE.md, "Hard links")."""

from __future__ import annotations

import errno
import os
import threading

import pytest
from conftest import CHUNK, Cluster
from namespace_files import (
    backing_files,
    home,
    names,
    owned_by,
    payload,
    read_file,
    write_file,
)

import benchfs_native as bn

pytestmark = pytest.mark.timeout(300)


def test_names_share_the_data_and_the_last_one_takes_it(cluster: Cluster) -> None:
    top = f"hard-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        c.mkdir(f"{top}/a")
        c.mkdir(f"{top}/b")
        data = payload(1, 5 * CHUNK + 99)
        write_file(c, f"{top}/a/one", data)
        ino = c.stat(f"{top}/a/one")["ino"]
        disks = {p: p.read_bytes() for p in backing_files(cluster, ino)}
        assert len(disks) == 4, "5 chunks spread over every daemon"
        # A second name in another directory: the same file, counted twice.
        two = c.link(f"{top}/a/one", f"{top}/b/two")
        assert (two["ino"], two["nlink"], two["size"]) == (ino, 2, len(data))
        assert c.stat(f"{top}/a/one")["nlink"] == 2
        assert read_file(c, f"{top}/b/two") == data
        # A write through one name shows through the other.
        h = c.open(f"{top}/b/two", os.O_WRONLY)
        c.write(h, 0, b"XYZ")
        c.close(h)
        data = b"XYZ" + data[3:]
        assert read_file(c, f"{top}/a/one") == data
        c.link(f"{top}/b/two", f"{top}/three")
        assert {c.stat(p)["nlink"] for p in (f"{top}/a/one", f"{top}/b/two", f"{top}/three")} == {3}
        # Removing names keeps the data while one is left.
        c.unlink(f"{top}/a/one")
        assert names(c, f"{top}/a") == []
        assert c.stat(f"{top}/b/two")["nlink"] == 2
        c.unlink(f"{top}/three")
        left = c.stat(f"{top}/b/two")
        assert (left["nlink"], left["ino"]) == (1, ino)
        assert read_file(c, f"{top}/b/two") == data
        assert len(backing_files(cluster, ino)) == 4
        # The last name takes the data from every daemon.
        c.unlink(f"{top}/b/two")
        assert backing_files(cluster, ino) == []
        with pytest.raises(FileNotFoundError):
            c.stat(f"{top}/b/two")


def test_names_on_every_daemon_of_a_file_homed_on_one(cluster: Cluster) -> None:
    top = f"hard-owners-{cluster.transport}"
    nodes = len(cluster.names)
    with cluster.client() as c:
        c.mkdir(top)
        data = payload(2, 2 * CHUNK + 5)
        write_file(c, f"{top}/src", data)
        ino = c.stat(f"{top}/src")["ino"]
        assert home(ino) in range(nodes)
        made = [owned_by(top, node, nodes) for node in range(nodes)]
        for i, path in enumerate(made):
            assert c.link(f"{top}/src", path)["nlink"] == i + 2
        for path in [*made, f"{top}/src"]:
            a = c.stat(path)
            assert (a["ino"], a["nlink"]) == (ino, nodes + 1)
            assert read_file(c, path) == data
        # Each name's removal is counted once, whichever daemon holds it.
        for i, path in enumerate(made):
            c.unlink(path)
            assert c.stat(f"{top}/src")["nlink"] == nodes - i
        assert read_file(c, f"{top}/src") == data
        assert backing_files(cluster, ino)


def test_every_errno_and_nothing_left_by_a_failed_link(cluster: Cluster) -> None:
    top = f"hard-errors-{cluster.transport}"
    nodes = len(cluster.names)
    with cluster.client() as c:
        c.mkdir(top)
        c.mkdir(f"{top}/dir")
        write_file(c, f"{top}/src", b"source")
        write_file(c, f"{top}/other", b"other")
        before = names(c, top)
        ino = c.stat(f"{top}/src")["ino"]
        # The new name is taken, by a file, a directory or the source itself.
        for taken in ("other", "dir", "src"):
            with pytest.raises(FileExistsError):
                c.link(f"{top}/src", f"{top}/{taken}")
        # No source.
        with pytest.raises(FileNotFoundError):
            c.link(f"{top}/nothing", f"{top}/new")
        # A directory source: no hard links to directories.
        with pytest.raises(PermissionError):
            c.link(f"{top}/dir", f"{top}/new")
        # The new name's parent missing (its owner the new name's or another
        # daemon) or a file.
        for i in range(200):
            parent = f"{top}/gone{i}"
            if bn.metadata_owner(parent, nodes) != bn.metadata_owner(f"{parent}/f", nodes):
                break
        for gone in (f"{top}/gone{i}/f", f"{top}/missing/f"):
            with pytest.raises(FileNotFoundError):
                c.link(f"{top}/src", gone)
        with pytest.raises(NotADirectoryError):
            c.link(f"{top}/src", f"{top}/other/f")
        # Every failure was undone: no new name, the count back at 1, and the
        # one name left still removes the data.
        assert names(c, top) == before
        a = c.stat(f"{top}/src")
        assert (a["ino"], a["nlink"]) == (ino, 1)
        c.mkdir(f"{top}/missing")
        assert names(c, f"{top}/missing") == []
        assert read_file(c, f"{top}/src") == b"source"
        assert backing_files(cluster, ino)
        c.unlink(f"{top}/src")
        assert backing_files(cluster, ino) == []


def test_rename_between_and_over_names_of_one_file(cluster: Cluster) -> None:
    top = f"hard-rename-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        data = payload(4, CHUNK + 17)
        write_file(c, f"{top}/a", data)
        ino = c.link(f"{top}/a", f"{top}/b")["ino"]
        # One name onto another of the same file: nothing happens (POSIX).
        c.rename(f"{top}/a", f"{top}/b")
        assert names(c, top) == ["a", "b"]
        assert {c.stat(f"{top}/{n}")["nlink"] for n in "ab"} == {2}
        # A linked name moves as any name, still counted.
        c.mkdir(f"{top}/d")
        c.rename(f"{top}/a", f"{top}/d/moved")
        assert c.stat(f"{top}/d/moved")["nlink"] == 2
        # Another file over a linked name: one name less, the data stays.
        write_file(c, f"{top}/new", b"new")
        c.rename(f"{top}/new", f"{top}/b")
        assert read_file(c, f"{top}/b") == b"new"
        kept = c.stat(f"{top}/d/moved")
        assert (kept["ino"], kept["nlink"]) == (ino, 1)
        assert read_file(c, f"{top}/d/moved") == data
        # A linked name over another file: that file's data goes.
        c.link(f"{top}/d/moved", f"{top}/again")
        victim = c.stat(f"{top}/b")["ino"]
        c.rename(f"{top}/again", f"{top}/b")
        assert backing_files(cluster, victim) == []
        assert read_file(c, f"{top}/b") == data
        assert c.stat(f"{top}/b")["nlink"] == 2
        c.unlink(f"{top}/b")
        c.unlink(f"{top}/d/moved")
        assert backing_files(cluster, ino) == []


def test_hard_links_of_a_symbolic_link(cluster: Cluster) -> None:
    top = f"hard-symlink-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        made = c.symlink("some/target", f"{top}/l")
        second = c.link(f"{top}/l", f"{top}/m")
        assert (second["kind"], second["ino"], second["nlink"]) == ("symlink", made["ino"], 2)
        assert c.readlink(f"{top}/m") == "some/target"
        c.unlink(f"{top}/l")
        assert c.readlink(f"{top}/m") == "some/target"
        assert c.stat(f"{top}/m")["nlink"] == 1
        c.unlink(f"{top}/m")
        assert names(c, top) == []


def test_unlinked_names_of_one_file_counted_by_every_client(cluster: Cluster) -> None:
    top = f"hard-clients-{cluster.transport}"
    with cluster.client() as c, cluster.client(name="second") as d:
        c.mkdir(top)
        write_file(c, f"{top}/f", b"shared")
        d.link(f"{top}/f", f"{top}/g")
        assert c.stat(f"{top}/f")["nlink"] == 2
        c.unlink(f"{top}/g")
        assert d.stat(f"{top}/f")["nlink"] == 1
        with pytest.raises(OSError) as e:
            d.link(f"{top}/g", f"{top}/h")
        assert e.value.errno == errno.ENOENT


def linker(cluster: Cluster, top: str, start: threading.Barrier, out: list[object]) -> None:
    with cluster.client(name="linker") as c:
        for i in range(len(out)):
            start.wait()
            try:
                c.link(f"{top}/src", f"{top}/dst")
                out[i] = "linked"
            except OSError as e:
                out[i] = e.errno
            start.wait()


def test_a_link_racing_the_unlink_of_its_source_never_leaves_a_name_without_data(
    cluster: Cluster,
) -> None:
    # The count goes up before the source is marked, so either the unlink sees
    # an unmarked source and takes the data (and the link fails), or it drops a
    # count the link already raised (and the new name keeps the data). Either
    # way the home's link table is as it was: a link that failed at its mark
    # takes its entry back too.
    top = f"hard-race-{cluster.transport}"
    rounds = 100
    start = threading.Barrier(2, timeout=120)
    results: list[object] = [None] * rounds
    t = threading.Thread(target=linker, args=(cluster, top, start, results))
    outcomes = set()
    with cluster.client() as c:
        c.mkdir(top)
        t.start()
        for i in range(rounds):
            data = payload(100 + i, CHUNK + i)
            write_file(c, f"{top}/src", data)
            ino = c.stat(f"{top}/src")["ino"]
            entries = c.stats(home(ino))["link_table_entries"]
            start.wait()
            c.unlink(f"{top}/src")
            start.wait()
            linked = results[i] == "linked"
            assert linked or results[i] == errno.ENOENT, results[i]
            outcomes.add(linked)
            if linked:
                a = c.stat(f"{top}/dst")
                assert (a["ino"], a["nlink"]) == (ino, 1)
                assert read_file(c, f"{top}/dst") == data
                c.unlink(f"{top}/dst")
            else:
                assert names(c, top) == []
            assert backing_files(cluster, ino) == [], "data left after the last name"
            assert c.stats(home(ino))["link_table_entries"] == entries, results[i]
        t.join(timeout=60)
    assert not t.is_alive()


def two_names(cluster: Cluster, c: bn.Client, top: str, data: bytes) -> tuple[str, str]:
    """A file with two names whose records two different daemons hold."""
    nodes = len(cluster.names)
    first, second = owned_by(top, 0, nodes), owned_by(top, 1, nodes)
    write_file(c, first, data)
    c.link(first, second)
    return first, second


def test_attributes_set_through_one_name_are_every_names_for_every_client(
    cluster: Cluster,
) -> None:
    # POSIX keeps mode, owner and times in the inode: a change through one name
    # is the file's, seen through the other by a client that never saw it made.
    top = f"hard-attrs-{cluster.transport}"
    with cluster.client() as c, cluster.client(name="second") as d:
        c.mkdir(top)
        a, b = two_names(cluster, c, top, b"shared attributes")
        before = d.stat(b)
        changed = c.setattr(a, mode=0o600)
        assert (changed["mode"] & 0o7777, changed["nlink"]) == (0o600, 2)
        seen = d.stat(b)
        assert (seen["mode"] & 0o7777, seen["kind"], seen["nlink"]) == (0o600, "file", 2)
        assert seen["ctime_unix_ns"] >= before["ctime_unix_ns"]
        d.setattr(b, uid=4321, gid=1234)
        assert (c.stat(a)["uid"], c.stat(a)["gid"]) == (4321, 1234)
        atime, mtime = 1_000_000_000_123, 2_000_000_000_456
        c.setattr(a, atime_ns=atime, mtime_ns=mtime)
        for who, name in ((d, b), (c, b), (d, a)):
            s = who.stat(name)
            assert (s["atime_unix_ns"], s["mtime_unix_ns"]) == (atime, mtime), name
            assert (s["mode"] & 0o7777, s["uid"], s["gid"]) == (0o600, 4321, 1234), name
        # Size is the data's, shared as before.
        d.setattr(b, size=6)
        assert c.stat(a)["size"] == 6


def test_attributes_survive_the_name_they_were_set_through(cluster: Cluster) -> None:
    top = f"hard-attrs-left-{cluster.transport}"
    with cluster.client() as c, cluster.client(name="second") as d:
        c.mkdir(top)
        a, b = two_names(cluster, c, top, b"kept")
        third = f"{top}/third"
        c.link(a, third)
        c.setattr(a, mode=0o640, uid=77, mtime_ns=3_000_000_000_000)
        c.unlink(a)
        left = d.stat(b)
        assert (left["mode"] & 0o7777, left["uid"], left["nlink"]) == (0o640, 77, 2)
        assert left["mtime_unix_ns"] == 3_000_000_000_000
        # Back at one name: the last one still shows the latest change, made
        # through a name that is gone since.
        d.setattr(third, mode=0o604, gid=88)
        d.unlink(third)
        last = c.stat(b)
        assert (last["mode"] & 0o7777, last["uid"], last["gid"]) == (0o604, 77, 88)
        assert last["nlink"] == 1
        assert read_file(c, b) == b"kept"
        # Changes through the last name go on being seen by every client.
        c.setattr(b, mode=0o400)
        assert d.stat(b)["mode"] & 0o7777 == 0o400
        c.unlink(b)
        with pytest.raises(FileNotFoundError):
            d.stat(b)


def test_a_symbolic_links_names_share_owner_and_times_not_a_mode(cluster: Cluster) -> None:
    top = f"hard-attrs-symlink-{cluster.transport}"
    with cluster.client() as c, cluster.client(name="second") as d:
        c.mkdir(top)
        made = c.symlink("some/target", f"{top}/l")
        c.link(f"{top}/l", f"{top}/m")
        c.setattr(f"{top}/l", mode=0o600, uid=55)
        seen = d.stat(f"{top}/m")
        assert (seen["mode"], seen["uid"]) == (made["mode"], 55)
