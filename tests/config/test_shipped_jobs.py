"""Everything shipped in jobs/ is valid: configs load, job scripts call
``benchfs run`` with the right options (a stand-in ``benchfs`` records them,
since no Slurm or PBS runs here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchfs.config import expand_sweep, load_config
from benchfs.config.schema import KINDS

JOBS = Path(__file__).resolve().parents[2] / "jobs"
CONFIGS = sorted(JOBS.glob("*.toml"))
RECORDER = '#!/bin/sh\nprintf "%s\\n" "$@" > "$BENCHFS_RECORD"\n'


def test_expected_files_are_shipped() -> None:
    names = {path.name for path in JOBS.iterdir()}
    assert {
        "local.toml",
        "ior-easy.toml",
        "sweep-transfer-size.toml",
        "slurm.sbatch",
        "pbs.sh",
    } <= names


@pytest.mark.parametrize("path", CONFIGS, ids=[path.name for path in CONFIGS])
def test_every_config_validates(path: Path) -> None:
    points = expand_sweep(load_config(path))
    assert points
    assert all(point.config.output.label for point in points)


def test_sweep_file_sweeps_transfer_size() -> None:
    points = expand_sweep(load_config(JOBS / "sweep-transfer-size.toml"))
    assert [p.config.workload.transfer_size for p in points] == [
        4 << 10,
        64 << 10,
        1 << 20,
        4 << 20,
    ]


@pytest.mark.parametrize(
    ("script", "nodes", "env"),
    [
        ("slurm.sbatch", "slurm", {"SLURM_SUBMIT_DIR": ""}),
        ("pbs.sh", "pbs", {"PBS_O_WORKDIR": ""}),
    ],
)
def test_job_scripts_call_benchfs_run(
    tmp_path: Path, script: str, nodes: str, env: dict[str, str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "benchfs").write_text(RECORDER)
    (bin_dir / "benchfs").chmod(0o755)
    record = tmp_path / "argv"
    base = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "BENCHFS_RECORD": str(record),
        **{key: str(JOBS.parent) for key in env},
    }

    subprocess.run(["bash", str(JOBS / script)], env=base, check=True, timeout=60)
    assert record.read_text().splitlines() == [
        "run", "--nodes", nodes, "--config", "jobs/ior-easy.toml",
    ]  # fmt: skip

    custom = {
        **base,
        "BENCHFS_CONFIG": "jobs/sweep-transfer-size.toml",
        "BENCHFS_ARGS": "--set workload.repetitions=5",
    }
    subprocess.run(["bash", str(JOBS / script)], env=custom, check=True, timeout=60)
    assert record.read_text().splitlines() == [
        "run", "--nodes", nodes, "--config", "jobs/sweep-transfer-size.toml",
        "--set", "workload.repetitions=5",
    ]  # fmt: skip


def test_every_key_is_documented() -> None:
    doc = (JOBS.parent / "docs" / "CONFIG.md").read_text()
    missing = []
    for key, kind in KINDS.items():
        section, _, name = key.rpartition(".")
        if kind == "section":
            if f"[{key}]" not in doc:
                missing.append(key)
        elif f"`{name}`" not in doc or (section and f"[{section}]" not in doc):
            missing.append(key)
    assert missing == []
