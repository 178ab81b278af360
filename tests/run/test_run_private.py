"""What a real `benchfs run` creates is this user's only (0700 directories),
and a data directory another user owns is refused, naming it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from run_helpers import (
    SHM,
    assert_nothing_left,
    benchfs_run,
    run_dirs,
    running_phase,
    small_args,
)

NOBODY = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_every_directory_of_a_run_is_private(tmp_path: Path) -> None:
    args = small_args(tmp_path, "--repetitions", "100000", "--transfer-size", "4k")
    with running_phase(tmp_path, args) as run:
        (run_dir,) = run_dirs(tmp_path / "results")
        (data_root,) = (tmp_path / "data").glob(f"benchfs-{run.token}-g0")
        private = [
            run_dir,
            run.scratch,
            run.scratch / "g0" / "registry",
            run.scratch / "g0" / "configs",
            run.scratch / "p0",
            data_root,
            *sorted(data_root.iterdir()),
            SHM / f"benchfs-{run.token}",
        ]
        assert len(private) == 11
        assert {str(path): mode(path) for path in private} == {str(p): 0o700 for p in private}
        # Files the daemons and the orchestrator write inside: not readable by others.
        records = sorted((run.scratch / "g0" / "registry").glob("*.json"))
        assert records and all(mode(path) & 0o077 == 0 for path in records)
        os.kill(run.process.pid, 15)
        code, output = run.finish()
    assert code == 128 + 15, output
    assert_nothing_left(tmp_path, run.token)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away needs root")
def test_a_data_dir_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    taken = tmp_path / "data"
    taken.mkdir()
    taken.chmod(0o777)  # anyone could have made it: as in /tmp
    os.chown(taken, NOBODY, NOBODY)
    done = benchfs_run(small_args(tmp_path), timeout=120)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert f"{taken}: owned by uid {NOBODY}, not by you" in errors[0], errors[0]
    assert list(taken.iterdir()) == []
