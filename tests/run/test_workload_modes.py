"""Every config selects exactly one registered workload mode, the one its
keys name; a mode's name is its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchfs.config import RunConfig
from benchfs.run.workloads import Workload, register_workload, workload_class, workload_names
from benchfs.run.workloads.ranks import RanksWorkload

MODES = [
    ({}, "ranks"),
    ({"metadata.mode": "only"}, "ranks"),
    ({"workload.target": "posix:/tmp"}, "ranks"),
    ({"suite.name": "io500-quick"}, "suite"),
    ({"suite.name": "io500-quick", "workload.interface": "mount"}, "suite"),
    ({"suite.name": "io500-quick", "suite.tool": "ior", "workload.target": "posix:/tmp"},
     "suite-ior"),
    ({"suite.name": "io500", "suite.tool": "io500", "workload.interface": "mount"},
     "suite-io500"),
    ({"workload.tool": "fio", "workload.target": "posix:/tmp"}, "tool"),
    ({"workload.tool": "mdtest", "workload.interface": "mount"}, "tool"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "mode"), MODES)
def test_a_config_selects_the_mode_its_keys_name(overrides: dict[str, str], mode: str) -> None:
    sections: dict[str, dict[str, str]] = {}
    for key, value in overrides.items():
        section, _, name = key.partition(".")
        sections.setdefault(section, {})[name] = value
    config = RunConfig.model_validate(sections)
    assert workload_class(config).name == mode


def test_every_mode_is_registered_once_by_its_own_name() -> None:
    assert workload_names() == ["ranks", "suite", "suite-io500", "suite-ior", "tool"]

    class Twin(RanksWorkload):
        name = "ranks"

    with pytest.raises(ValueError, match=r"^workload mode name 'ranks' is already registered"):
        register_workload(Twin)


def test_the_ranks_mode_plans_without_looking_for_a_tool(tmp_path: Path) -> None:
    workload: Workload = workload_class(RunConfig()).plan(RunConfig(), seed=7)
    assert isinstance(workload, RanksWorkload) and workload.spec is None
