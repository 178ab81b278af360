"""A phase's stonewall from input is bounded at the boundary."""

from __future__ import annotations

import pytest
from conftest import Cluster

pytestmark = pytest.mark.timeout(120)


def test_absurd_stonewall_is_a_value_error(fresh_cluster: Cluster) -> None:
    fresh_cluster.start()
    with fresh_cluster.client() as c:
        for value in (1e19, float("inf"), float("nan"), -1.0):
            with pytest.raises(ValueError, match="stonewall_s"):
                c.run_phase(
                    phase="write",
                    file_name="sw",
                    transfer_size=4096,
                    block_size=4096,
                    stonewall_s=value,
                )
        result = c.run_phase(phase="write", file_name="sw", transfer_size=4096, block_size=4096)
        assert result["ops"] == 1
