"""Every entry point that creates or writes into a directory refuses one that
another user planted: a symbolic link of theirs at any component, a
directory of theirs, or one in a world-writable directory without the
sticky bit. The other user is real (uid 65534 through setpriv); each
refusal is one line naming the path, and nothing lands in the link's target."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_support import OTHER_UID, Neighbour, benchfs, error_line, neighbour

__all__ = ["neighbour"]

LINK_REFUSED = f"a symbolic link owned by uid {OTHER_UID}, not by you"


def daemon_config(path: Path, **dirs: Path) -> Path:
    lines = ['node_name = "n0"', "node_id = 0", 'buffer_pool_size = "16m"']
    lines += [f'{key} = "{value}"' for key, value in dirs.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_daemon_refuses_a_registry_link_another_user_planted(neighbour: Neighbour) -> None:
    # The report's case: /var/tmp/ww/reg -> /root, planted by another user.
    link = neighbour.plant_link(neighbour.sticky / "reg", neighbour.victim)
    config = daemon_config(
        neighbour.root / "d.toml", registry_dir=link, data_dir=neighbour.root / "data"
    )
    line = error_line(benchfs("daemon", "--config", str(config)))
    assert line.startswith(f"error: {config}: daemon n0 (node 0): registry_dir: {link}: "), line
    assert LINK_REFUSED in line, line
    assert neighbour.victim_files() == []  # no session.key, no record in the link's target


def test_the_daemon_refuses_a_registry_in_another_users_directory(neighbour: Neighbour) -> None:
    theirs = neighbour.plant_dir(neighbour.sticky / "theirs")
    config = daemon_config(
        neighbour.root / "d.toml", registry_dir=theirs / "reg", data_dir=neighbour.root / "data"
    )
    line = error_line(benchfs("daemon", "--config", str(config)))
    assert f"registry_dir: {theirs}: owned by uid {OTHER_UID}, not by you" in line, line
    assert list(theirs.iterdir()) == []


@pytest.mark.parametrize("key", ["data_dir", "trace_dir"])
def test_the_daemon_refuses_a_link_at_any_component(neighbour: Neighbour, key: str) -> None:
    # The last component is a real directory; the link is above it.
    link = neighbour.plant_link(neighbour.sticky / "up", neighbour.victim)
    dirs = {"registry_dir": neighbour.root / "reg", "data_dir": neighbour.root / "data"}
    dirs[key] = link / "below" / "dir"
    config = daemon_config(neighbour.root / "d.toml", **dirs)
    line = error_line(benchfs("daemon", "--config", str(config)))
    assert f"{key}: {link}: {LINK_REFUSED}" in line, line
    assert neighbour.victim_files() == []


def test_the_daemon_refuses_a_directory_anyone_could_swap(neighbour: Neighbour) -> None:
    # Its own directory, but in a world-writable one without the sticky bit.
    mine = neighbour.open / "mine"
    mine.mkdir(mode=0o700)
    config = daemon_config(
        neighbour.root / "d.toml", registry_dir=mine / "reg", data_dir=neighbour.root / "data"
    )
    line = error_line(benchfs("daemon", "--config", str(config)))
    assert f"registry_dir: {mine}: {neighbour.open} is writable by every user" in line, line
    assert list(mine.iterdir()) == []


def test_mount_refuses_a_registry_link_another_user_planted(neighbour: Neighbour) -> None:
    link = neighbour.plant_link(neighbour.sticky / "reg", neighbour.victim)
    mountpoint = neighbour.root / "mnt"
    mountpoint.mkdir(mode=0o700)
    line = error_line(benchfs("mount", "--registry", str(link), str(mountpoint)))
    assert line.startswith(f"error: --registry {link}: {link}: {LINK_REFUSED}"), line


def test_mount_refuses_a_mount_point_another_user_owns(neighbour: Neighbour) -> None:
    registry = neighbour.root / "reg"
    registry.mkdir(mode=0o700)
    theirs = neighbour.plant_dir(neighbour.sticky / "mnt")
    line = error_line(benchfs("mount", "--registry", str(registry), str(theirs)))
    assert f"mount point {theirs}: {theirs}: owned by uid {OTHER_UID}" in line, line


def test_run_refuses_a_results_dir_below_another_users_link(neighbour: Neighbour) -> None:
    link = neighbour.plant_link(neighbour.sticky / "up", neighbour.victim)
    done = benchfs(
        "run", "--results-dir", str(link / "results"),
        "--set", f"cluster.data_dir={neighbour.root / 'data'}",
        "--set", "preflight.enabled=false",
    )  # fmt: skip
    line = error_line(done)
    assert f"{link}: {LINK_REFUSED}" in line, line
    assert neighbour.victim_files() == []


@pytest.mark.parametrize("key", ["cluster.data_dir", "cluster.registry_dir"])
def test_run_refuses_its_directories_below_another_users_link(
    neighbour: Neighbour, key: str
) -> None:
    link = neighbour.plant_link(neighbour.sticky / "up", neighbour.victim)
    sets = {
        "cluster.data_dir": str(neighbour.root / "data"),
        "preflight.enabled": "false",
        key: str(link / "below"),
    }
    args = [word for item in sets.items() for word in ("--set", "=".join(item))]
    done = benchfs("run", "--results-dir", str(neighbour.root / "results"), *args)
    line = error_line(done)
    assert f"{link}: {LINK_REFUSED}" in line, line
    assert neighbour.victim_files() == []


def test_diagnose_refuses_a_directory_behind_another_users_link(neighbour: Neighbour) -> None:
    link = neighbour.plant_link(neighbour.sticky / "disk", neighbour.victim)
    done = benchfs("diagnose", "--dir", str(link), "--quick", "--json", "--no-history")
    assert done.returncode == 2, done.stderr
    assert f"cannot work in {link}: {link}: {LINK_REFUSED}" in done.stdout, done.stdout
    assert neighbour.victim_files() == []


def test_bench_refuses_a_directory_behind_another_users_link(neighbour: Neighbour) -> None:
    link = neighbour.plant_link(neighbour.sticky / "disk", neighbour.victim)
    line = error_line(benchfs("bench", "storage", "--dir", str(link), "--rounds", "1"))
    assert f"{link}: {LINK_REFUSED}" in line, line
    assert neighbour.victim_files() == []
