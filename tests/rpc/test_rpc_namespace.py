"""The namespace against four real daemons: directories, strict parents and their
errnos, rename without copying data, attributes, statfs (docs/NAMESPACE.md)."""

from __future__ import annotations

import errno
import itertools
import os
import stat
import threading
import time

import pytest
from conftest import CHUNK, Cluster
from namespace_files import backing_files, names, owned_by, payload, read_file, write_file

import benchfs_native as bn

pytestmark = pytest.mark.timeout(300)


def test_the_root_is_a_directory(cluster: Cluster) -> None:
    with cluster.client() as c:
        root = c.stat("")
        assert (root["ino"], root["kind"], root["nlink"]) == (1, "dir", 2)
        assert stat.S_ISDIR(root["mode"])
        with pytest.raises(OSError) as e:
            c.rmdir("")
        assert e.value.errno == errno.EBUSY


def test_ten_thousand_entries_in_one_directory(cluster: Cluster) -> None:
    top = f"many-{cluster.transport}"
    count = 10_000
    with cluster.client() as c:
        c.mkdir(top)
        made = {c.mkdir(f"{top}/d{i:05}")["ino"] for i in range(count)}
        assert len(made) == count, "every directory has its own id"
        entries = c.readdir(top)
        assert [e["name"] for e in entries] == [f"d{i:05}" for i in range(count)]
        assert {e["kind"] for e in entries} == {"dir"}
        assert {e["ino"] for e in entries} == made
        with pytest.raises(OSError) as e:
            c.rmdir(top)
        assert e.value.errno == errno.ENOTEMPTY
        for i in range(count):
            c.rmdir(f"{top}/d{i:05}")
        assert c.readdir(top) == []
        c.rmdir(top)
        assert top not in names(c, "")


def test_nested_ten_levels(cluster: Cluster) -> None:
    levels = [f"nest-{cluster.transport}"] + [f"l{i}" for i in range(1, 10)]
    with cluster.client() as c:
        paths = ["/".join(levels[: i + 1]) for i in range(len(levels))]
        for p in paths:
            c.mkdir(p)
        deepest = f"{paths[-1]}/file"
        write_file(c, deepest, payload(10, 3 * CHUNK + 1))
        assert read_file(c, deepest) == payload(10, 3 * CHUNK + 1)
        for parent, child in itertools.pairwise(paths):
            assert names(c, parent) == [child.rsplit("/", 1)[1]]
            assert c.stat(child)["kind"] == "dir"
        assert names(c, paths[-1]) == ["file"]
        c.unlink(deepest)
        for p in reversed(paths):
            c.rmdir(p)
        with pytest.raises(FileNotFoundError):
            c.stat(paths[0])


def test_strict_parents_and_every_errno(cluster: Cluster) -> None:
    top = f"errno-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        write_file(c, f"{top}/file", b"x")
        c.mkdir(f"{top}/dir")
        write_file(c, f"{top}/dir/inner", b"y")
        with pytest.raises(FileNotFoundError, match=f"{top}/missing"):
            c.create(f"{top}/missing/f")
        with pytest.raises(FileNotFoundError):
            c.mkdir(f"{top}/missing/d")
        with pytest.raises(NotADirectoryError):
            c.create(f"{top}/file/f")
        with pytest.raises(NotADirectoryError):
            c.mkdir(f"{top}/file/d")
        with pytest.raises(FileExistsError):
            c.mkdir(f"{top}/dir")
        with pytest.raises(FileExistsError):
            c.mkdir(f"{top}/file")
        with pytest.raises(OSError) as e:
            c.rmdir(f"{top}/dir")
        assert e.value.errno == errno.ENOTEMPTY
        with pytest.raises(NotADirectoryError):
            c.rmdir(f"{top}/file")
        with pytest.raises(FileNotFoundError):
            c.rmdir(f"{top}/nothing")
        with pytest.raises(IsADirectoryError):
            c.unlink(f"{top}/dir")
        with pytest.raises(IsADirectoryError):
            c.open(f"{top}/dir", os.O_RDONLY)
        with pytest.raises(IsADirectoryError):
            c.truncate(f"{top}/dir", 0)
        with pytest.raises(NotADirectoryError):
            c.readdir(f"{top}/file")
        with pytest.raises(FileNotFoundError):
            c.readdir(f"{top}/nothing")
        with pytest.raises(OSError) as e:
            c.rename(f"{top}/dir", f"{top}/dir2")
        assert e.value.errno == errno.EXDEV
        with pytest.raises(IsADirectoryError):
            c.rename(f"{top}/file", f"{top}/dir")
        with pytest.raises(FileNotFoundError):
            c.rename(f"{top}/file", f"{top}/missing/f")
        with pytest.raises(NotADirectoryError):
            c.rename(f"{top}/file", f"{top}/file/f")
        with pytest.raises(FileNotFoundError):
            c.rename(f"{top}/nothing", f"{top}/f")
        # Nothing was left behind by the refused operations.
        assert names(c, top) == ["dir", "file"]
        assert c.statfs()["files"] >= 5


def test_rename_moves_records_not_data(cluster: Cluster) -> None:
    top = f"rename-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        c.mkdir(f"{top}/a")
        c.mkdir(f"{top}/b")
        data = payload(1, 5 * CHUNK + 123)
        write_file(c, f"{top}/a/one", data)
        before = c.stat(f"{top}/a/one")
        disks = {p: p.read_bytes() for p in backing_files(cluster, before["ino"])}
        assert len(disks) == 4, "5 chunks spread over every daemon"
        # Within a directory.
        c.rename(f"{top}/a/one", f"{top}/a/two")
        assert names(c, f"{top}/a") == ["two"]
        assert read_file(c, f"{top}/a/two") == data
        # Across directories.
        c.rename(f"{top}/a/two", f"{top}/b/three")
        assert names(c, f"{top}/a") == []
        assert names(c, f"{top}/b") == ["three"]
        after = c.stat(f"{top}/b/three")
        assert (after["ino"], after["size"], after["mode"]) == (
            before["ino"],
            before["size"],
            before["mode"],
        )
        assert {p: p.read_bytes() for p in backing_files(cluster, after["ino"])} == disks
        # Over an existing file: its data is removed from every daemon.
        old = payload(2, 3 * CHUNK)
        write_file(c, f"{top}/b/victim", old)
        victim = c.stat(f"{top}/b/victim")["ino"]
        assert backing_files(cluster, victim)
        c.rename(f"{top}/b/three", f"{top}/b/victim")
        assert names(c, f"{top}/b") == ["victim"]
        assert read_file(c, f"{top}/b/victim") == data
        assert backing_files(cluster, victim) == []
        with pytest.raises(FileNotFoundError):
            c.stat(f"{top}/b/three")
        # Onto itself: nothing changes.
        c.rename(f"{top}/b/victim", f"{top}/b/victim")
        assert read_file(c, f"{top}/b/victim") == data


def parent_checks(c: bn.Client, nodes: int) -> int:
    """check_parent requests the daemons have served, summed."""
    return sum(c.stats(n)["requests"].get("check_parent", 0) for n in range(nodes))


def test_a_rename_over_any_name_makes_no_parent_check(cluster: Cluster) -> None:
    """Over a symbolic link, a file or one of two names of a file, the parent
    held a name throughout, so the client checks it only when nothing was
    replaced (a failed check would undo the rename and lose the replaced name);
    over a name it only stamps the parent's times. Either way the old parent
    is stamped too: two check_parent requests, the parents being apart."""
    top = f"rename-over-{cluster.transport}"
    nodes = len(cluster.names)
    d = f"{top}/d"
    # Names whose parent's record is on another daemon: checked by a request.
    apart = (
        n
        for i in itertools.count()
        if bn.metadata_owner(n := f"{d}/n{i}", nodes) != bn.metadata_owner(d, nodes)
    )
    link, file, second, nothing = (next(apart) for _ in range(4))
    with cluster.client() as c:
        c.mkdir(top)
        c.mkdir(d)
        c.symlink("old/target", link)
        write_file(c, file, payload(1, CHUNK))
        shared = payload(2, CHUNK + 5)
        write_file(c, f"{top}/shared", shared)
        c.link(f"{top}/shared", second)
        for i, (to, replaced) in enumerate(
            [(link, True), (file, True), (second, True), (nothing, False)]
        ):
            src = f"{top}/src{i}"
            data = payload(10 + i, 2 * CHUNK + i)
            write_file(c, src, data)
            ino = c.stat(src)["ino"]
            before = parent_checks(c, nodes)
            c.rename(src, to)
            assert parent_checks(c, nodes) - before == 2, (to, replaced)
            moved = c.stat(to)
            assert (moved["ino"], moved["kind"], moved["nlink"]) == (ino, "file", 1), to
            assert read_file(c, to) == data, to
            with pytest.raises(FileNotFoundError):
                c.stat(src)
        # The other name of the replaced second name keeps its data, one name less.
        assert c.stat(f"{top}/shared")["nlink"] == 1
        assert read_file(c, f"{top}/shared") == shared
        assert sorted(names(c, d)) == sorted(
            n.rsplit("/", 1)[1] for n in (link, file, second, nothing)
        )


def missing_parent(top: str, nodes: int, apart: bool) -> str:
    """A target under a missing directory whose record's owner is (apart) or
    is not the owner of the target's own record."""
    return next(
        f"{d}/f"
        for i in range(1000)
        if (bn.metadata_owner(d := f"{top}/gone{i}", nodes) != bn.metadata_owner(f"{d}/f", nodes))
        == apart
    )


@pytest.mark.parametrize("apart", [True, False], ids=["parent-elsewhere", "parent-here"])
def test_a_failed_rename_leaves_both_names_as_they_were(cluster: Cluster, apart: bool) -> None:
    # With the parent on another daemon, the target's record is linked before
    # the parent check fails and must be unlinked again; on the same daemon
    # the link itself refuses.
    top = f"rename-undo-{cluster.transport}-{apart}"
    with cluster.client() as c:
        c.mkdir(top)
        data = payload(3, 2 * CHUNK + 7)
        write_file(c, f"{top}/src", data)
        ino = c.stat(f"{top}/src")["ino"]
        target = missing_parent(top, len(cluster.names), apart)
        with pytest.raises(FileNotFoundError):
            c.rename(f"{top}/src", target)
        assert read_file(c, f"{top}/src") == data
        assert c.stat(f"{top}/src")["ino"] == ino
        # The directory made afterwards is empty: no record of the target stayed.
        parent = target.rsplit("/", 1)[0]
        c.mkdir(parent)
        assert names(c, parent) == []
        with pytest.raises(FileNotFoundError):
            c.stat(target)
        # A parent that is a file: ENOTDIR, and again nothing moved.
        write_file(c, f"{top}/plain", b"x")
        with pytest.raises(NotADirectoryError):
            c.rename(f"{top}/src", f"{top}/plain/f")
        assert names(c, top) == sorted(["src", "plain", parent.rsplit("/", 1)[1]])
        assert read_file(c, f"{top}/src") == data


def racer(cluster: Cluster, path: str, start: threading.Barrier, out: list[object]) -> None:
    with cluster.client(name="racer") as c:
        for i in range(len(out)):
            start.wait()
            try:
                c.close(c.create(path, exclusive=True))
                out[i] = "created"
            except OSError as e:
                out[i] = e.errno
            start.wait()


def test_a_create_racing_an_rmdir_never_leaves_an_orphan(cluster: Cluster) -> None:
    top = f"race-{cluster.transport}"
    rounds = 150
    start = threading.Barrier(2, timeout=120)
    results: list[object] = [None] * rounds
    t = threading.Thread(target=racer, args=(cluster, f"{top}/d/f", start, results))
    outcomes = set()
    with cluster.client() as c:
        c.mkdir(top)
        t.start()
        for i in range(rounds):
            c.mkdir(f"{top}/d")
            start.wait()
            try:
                c.rmdir(f"{top}/d")
                removed = True
            except OSError as e:
                assert e.errno == errno.ENOTEMPTY, e
                removed = False
            start.wait()
            created = results[i] == "created"
            assert created or results[i] in (errno.ENOENT,), results[i]
            outcomes.add((created, removed))
            if removed:
                assert not created, "the file was created in a removed directory"
                with pytest.raises(FileNotFoundError):
                    c.stat(f"{top}/d/f")
                # No record of d/f survives on any daemon (it would show once d is back).
                c.mkdir(f"{top}/d")
                assert names(c, f"{top}/d") == []
                c.rmdir(f"{top}/d")
            else:
                # Both may fail: the rmdir counted the create's record before
                # the create saw the mark and took it back.
                assert names(c, f"{top}/d") == (["f"] if created else [])
                if created:
                    c.unlink(f"{top}/d/f")
                c.rmdir(f"{top}/d")
        t.join(timeout=60)
    assert not t.is_alive()
    assert (True, True) not in outcomes


def test_chmod_chown_truncate_and_times(cluster: Cluster) -> None:
    top = f"attr-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        path = f"{top}/f"
        write_file(c, path, payload(3, 2 * CHUNK))
        a = c.setattr(path, mode=0o4755)
        assert stat.S_IMODE(a["mode"]) == 0o4755, "set-user-ID is kept"
        assert stat.S_ISREG(a["mode"])
        a = c.setattr(path, mode=0o6750)
        assert stat.S_IMODE(a["mode"]) == 0o6750
        # chown drops set-user-ID and set-group-ID (group-executable), as Linux.
        a = c.setattr(path, uid=4321, gid=765)
        assert (a["uid"], a["gid"], stat.S_IMODE(a["mode"])) == (4321, 765, 0o750)
        a = c.setattr(path, mode=0o2640)
        a = c.setattr(path, gid=766)
        assert stat.S_IMODE(a["mode"]) == 0o2640, "set-group-ID without group execute stays"
        a = c.setattr(path, mode=0o640)
        d = c.setattr(top, mode=0o1777)
        assert (d["kind"], stat.S_IMODE(d["mode"])) == ("dir", 0o1777)
        c.setattr(top, mode=0o3775)
        d = c.setattr(top, uid=os.geteuid())
        assert stat.S_IMODE(d["mode"]) == 0o3775, "a directory's chown keeps them"
        # truncate through setattr, down then up
        assert c.setattr(path, size=CHUNK + 10)["size"] == CHUNK + 10
        assert read_file(c, path) == payload(3, 2 * CHUNK)[: CHUNK + 10]
        assert c.setattr(path, size=3 * CHUNK)["size"] == 3 * CHUNK
        with pytest.raises(IsADirectoryError):
            c.setattr(top, size=0)
        # utimens into the past sticks (as tar and cp -p do after writing) ...
        past = 1_000_000_000 * 1_000_000_000 + 123
        a = c.setattr(path, atime_ns=past - 7, mtime_ns=past)
        assert (a["mtime_unix_ns"], a["atime_unix_ns"]) == (past, past - 7)
        assert c.stat(path)["mtime_unix_ns"] == past
        assert a["ctime_unix_ns"] > past
        # ... until data is written after it.
        h = c.open(path, os.O_WRONLY)
        c.write(h, 5, b"later")
        c.close(h)
        assert c.stat(path)["mtime_unix_ns"] > time.time_ns() - 3_600 * 10**9
        # The same on a file without data, and on a directory.
        c.close(c.create(f"{top}/empty"))
        assert c.setattr(f"{top}/empty", mtime_ns=past)["mtime_unix_ns"] == past
        assert c.setattr(top, mtime_ns=past)["mtime_unix_ns"] == past
        with pytest.raises(FileNotFoundError):
            c.setattr(f"{top}/missing", mode=0o600)


def test_set_creator_owns_later_creates(cluster: Cluster) -> None:
    top = f"owner-{cluster.transport}"
    with cluster.client() as c:
        me = c.mkdir(top)
        assert (me["uid"], me["gid"]) == (os.geteuid(), os.getegid())
        c.set_creator(1111, 2222)
        assert (c.mkdir(f"{top}/d")["uid"], c.stat(f"{top}/d")["gid"]) == (1111, 2222)
        c.close(c.create(f"{top}/f"))
        assert (c.stat(f"{top}/f")["uid"], c.stat(f"{top}/f")["gid"]) == (1111, 2222)
        assert c.stat(f"{top}/f")["nlink"] == 1


def test_statfs_sums_the_data_directories_file_systems_once(cluster: Cluster) -> None:
    with cluster.client() as c:
        before = c.statfs()
        top = f"statfs-{cluster.transport}"
        c.mkdir(top)
        for i in range(5):
            c.close(c.create(f"{top}/f{i}"))
        after = c.statfs()
    assert after["files"] == before["files"] + 6
    # The daemons' data directories share a file system here: it counts once.
    paths = {os.stat(cluster.root / "data" / n).st_dev: cluster.root / "data" / n
             for n in cluster.names}  # fmt: skip
    assert len(paths) < len(cluster.names)
    dirs = [os.statvfs(p) for p in paths.values()]
    unit = after["block_size"]
    assert unit == dirs[0].f_frsize
    assert after["blocks"] == sum(d.f_blocks * d.f_frsize for d in dirs) // unit
    free = sum(d.f_bfree * d.f_frsize for d in dirs) // unit
    # Free space moves with everything else on the machine: within 1%.
    assert abs(after["blocks_free"] - free) <= after["blocks"] // 100
    assert after["blocks_avail"] <= after["blocks_free"] <= after["blocks"]
    assert after["name_max"] == 255


def test_open_creat_trunc_of_a_new_file_touches_no_data(cluster: Cluster) -> None:
    top = f"otrunc-{cluster.transport}"
    flags = os.O_CREAT | os.O_TRUNC | os.O_WRONLY
    with cluster.client() as c:
        c.mkdir(top)
        rpcs = c.counters()["rpcs"]
        h = c.open(f"{top}/new", flags)
        assert c.counters()["rpcs"] - rpcs <= 2, "the create and its parent check only"
        c.close(h)
        ino = c.stat(f"{top}/new")["ino"]
        assert backing_files(cluster, ino) == []
        write_file(c, f"{top}/old", payload(4, CHUNK + 5))
        c.close(c.open(f"{top}/old", flags))
        assert c.stat(f"{top}/old")["size"] == 0
        assert read_file(c, f"{top}/old") == b""


def test_symbolic_links_are_records_with_targets(cluster: Cluster) -> None:
    top = f"links-{cluster.transport}"
    nodes = len(cluster.names)
    with cluster.client() as c:
        c.mkdir(top)
        write_file(c, f"{top}/file", b"data behind a link")
        file_owner = bn.metadata_owner(f"{top}/file", nodes)
        # A link on every daemon, to a file whose record another one holds.
        for node in range(nodes):
            path = owned_by(top, node, nodes, stem="l")
            a = c.symlink("file", path)
            assert (a["kind"], a["size"], a["nlink"]) == ("symlink", 4, 1)
            assert stat.S_ISLNK(a["mode"]) and stat.S_IMODE(a["mode"]) == 0o777
            assert c.stat(path) == a
            assert c.readlink(path) == "file"
        assert file_owner in range(nodes)
        # Dangling and absolute targets are kept as given, never resolved.
        c.symlink("../no/such/thing", f"{top}/dangling")
        assert c.readlink(f"{top}/dangling") == "../no/such/thing"
        c.symlink("/etc/passwd", f"{top}/absolute")
        assert c.stat(f"{top}/absolute")["size"] == len("/etc/passwd")
        kinds = {e["name"]: e["kind"] for e in c.readdir(top)}
        assert kinds["file"] == "file" and kinds["dangling"] == "symlink"
        assert list(kinds.values()).count("symlink") == nodes + 2
        # The name is taken; strict parents as for create.
        for taken in ("dangling", "file"):
            with pytest.raises(FileExistsError):
                c.symlink("x", f"{top}/{taken}")
        with pytest.raises(FileExistsError):
            c.create(f"{top}/dangling")
        with pytest.raises(FileNotFoundError):
            c.symlink("x", f"{top}/missing/l")
        with pytest.raises(NotADirectoryError):
            c.symlink("x", f"{top}/file/l")
        # Targets: at most 4095 bytes (PATH_MAX with its NUL), never empty.
        longest = "t/" * 2047 + "x"
        assert len(longest) == 4095
        c.symlink(longest, f"{top}/longest")
        assert c.readlink(f"{top}/longest") == longest
        with pytest.raises(OSError) as e:
            c.symlink(longest + "y", f"{top}/too-long")
        assert e.value.errno == errno.ENAMETOOLONG
        with pytest.raises(FileNotFoundError):
            c.symlink("", f"{top}/empty")
        # readlink of what is no link; the engine never follows one.
        for not_a_link in ("file", ""):
            with pytest.raises(OSError) as e:
                c.readlink(f"{top}/{not_a_link}".rstrip("/"))
            assert e.value.errno == errno.EINVAL
        with pytest.raises(FileNotFoundError):
            c.readlink(f"{top}/nothing")
        with pytest.raises(OSError) as e:
            c.open(f"{top}/dangling", os.O_RDONLY)
        assert e.value.errno == errno.ELOOP
        with pytest.raises(NotADirectoryError):
            c.readdir(f"{top}/dangling")
        names_before = names(c, top)
        assert "too-long" not in names_before and "empty" not in names_before


def test_rename_and_unlink_of_symbolic_links(cluster: Cluster) -> None:
    top = f"link-moves-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        c.mkdir(f"{top}/other")
        c.symlink("target/of/a", f"{top}/a")
        ino = c.stat(f"{top}/a")["ino"]
        # Renamed across directories (and daemons): record and target move.
        c.rename(f"{top}/a", f"{top}/other/b")
        moved = c.stat(f"{top}/other/b")
        assert (moved["ino"], moved["kind"]) == (ino, "symlink")
        assert c.readlink(f"{top}/other/b") == "target/of/a"
        with pytest.raises(FileNotFoundError):
            c.stat(f"{top}/a")
        # Over a file: the file's data goes, as for any rename over a file.
        data = payload(3, 2 * CHUNK)
        write_file(c, f"{top}/victim", data)
        victim = c.stat(f"{top}/victim")["ino"]
        assert backing_files(cluster, victim)
        c.rename(f"{top}/other/b", f"{top}/victim")
        assert c.readlink(f"{top}/victim") == "target/of/a"
        assert backing_files(cluster, victim) == []
        # A file over a link: the file keeps its data.
        write_file(c, f"{top}/f", data)
        c.rename(f"{top}/f", f"{top}/victim")
        assert c.stat(f"{top}/victim")["kind"] == "file"
        assert read_file(c, f"{top}/victim") == data
        # unlink removes a link (nothing of its target).
        c.symlink("victim", f"{top}/to-victim")
        c.unlink(f"{top}/to-victim")
        assert names(c, top) == ["other", "victim"]
        assert read_file(c, f"{top}/victim") == data
        # chown and times of a link are its own; its mode stays 0777.
        c.symlink("victim", f"{top}/l")
        a = c.setattr(f"{top}/l", mode=0o600, uid=4321, mtime_ns=5_000_000_000)
        assert (a["uid"], a["mtime_unix_ns"], stat.S_IMODE(a["mode"])) == (
            4321,
            5_000_000_000,
            0o777,
        )
        with pytest.raises(OSError) as e:
            c.setattr(f"{top}/l", size=1)
        assert e.value.errno == errno.EINVAL
        assert c.stat(f"{top}/victim")["uid"] != 4321


def test_names_over_255_bytes_and_paths_of_4096_are_refused_before_any_create(
    cluster: Cluster,
) -> None:
    top = f"long-{cluster.transport}"
    with cluster.client() as c:
        c.mkdir(top)
        c.close(c.create(f"{top}/plain"))
        too_long = f"{top}/{'n' * 256}"
        deep = f"{top}/{'d/' * 2100}"[: 4096 - 1].rstrip("/")
        full_path = deep + "x" * (4096 - len(deep))
        assert len(full_path) == 4096
        tries = {
            "create": lambda p: c.close(c.create(p)),
            "mkdir": lambda p: c.mkdir(p),
            "symlink": lambda p: c.symlink("plain", p),
            "rename": lambda p: c.rename(f"{top}/plain", p),
            "link": lambda p: c.link(f"{top}/plain", p),
            "stat": lambda p: c.stat(p),
            "phase": lambda p: c.run_phase(
                phase="write", file_name=p, transfer_size=4096, block_size=4096, segments=1
            ),
        }
        for path in (too_long, full_path):
            for what, call in tries.items():
                with pytest.raises(OSError) as e:
                    call(path)
                assert e.value.errno == errno.ENAMETOOLONG, (what, len(path))
                assert "bytes)" in str(e.value) and "\n" not in str(e.value)
        c.close(c.create(f"{top}/{'n' * 255}"))
        assert sorted(e["name"] for e in c.readdir(top)) == ["n" * 255, "plain"]


def test_a_directory_s_times_and_nlink_follow_its_entries(cluster: Cluster) -> None:
    top = f"times-{cluster.transport}"
    past = 1_000_000_000 * 1_000_000_000
    with cluster.client() as c:
        c.mkdir(top)
        c.mkdir(f"{top}/other")
        c.close(c.create(f"{top}/seed"))

        def changes(what: str, step, *dirs: str) -> None:
            before = {}
            for d in dirs:
                before[d] = c.setattr(d, mtime_ns=past)["ctime_unix_ns"]
            step()
            for d in dirs:
                a = c.stat(d)
                assert a["mtime_unix_ns"] > past, (what, d)
                assert a["ctime_unix_ns"] > before[d], (what, d)

        changes("create", lambda: c.close(c.create(f"{top}/f")), top)
        changes("mkdir", lambda: c.mkdir(f"{top}/sub"), top)
        changes("symlink", lambda: c.symlink("f", f"{top}/l"), top)
        changes("link", lambda: c.link(f"{top}/f", f"{top}/f2"), top)
        changes("unlink", lambda: c.unlink(f"{top}/f2"), top)
        changes("rename", lambda: c.rename(f"{top}/f", f"{top}/other/f"), top, f"{top}/other")
        changes(
            "rename over", lambda: c.rename(f"{top}/seed", f"{top}/other/f"), top, f"{top}/other"
        )
        changes("rmdir", lambda: c.rmdir(f"{top}/sub"), top)
        changes("top-level create", lambda: c.close(c.create(f"{top}-file")), "")
        assert c.stat(top)["nlink"] == 3, "2 and other"
        for i in range(3):
            c.mkdir(f"{top}/other/d{i}")
        assert (c.stat(top)["nlink"], c.stat(f"{top}/other")["nlink"]) == (3, 5)
        c.rmdir(f"{top}/other/d0")
        assert c.stat(f"{top}/other")["nlink"] == 4
        with pytest.raises(OSError):
            c.mkdir(f"{top}/other/d1")
        assert c.stat(f"{top}/other")["nlink"] == 4, "a refused mkdir counts nothing"
