"""The live view's device figures: each node's data device, as the run's iostat
wrote it, over each interval, and the layer they name (device, contention,
the kernel with the await quoted); iostat's JSON as ``iostat -x -t -o JSON``
writes it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from analysis.loaders.iostat import parse_iostat_json
from benchfs.run.live.devices import LiveDevices
from benchfs.run.live.layer import where
from benchfs.run.live.phase import PhaseRun
from benchfs.run.live.rule import Rule
from benchfs.run.live.sampler import Reading
from benchfs.workload.progress import PhaseStatus

START = 1_800_000_000  # whole seconds: iostat's timestamps are
NODES = ("local0", "local1", "local2", "local3")


def stats(node: str, answered: int, storage_ms: float, device: str | None = None) -> dict[str, Any]:
    ns = int(storage_ms * 1e6)
    return {
        "in_flight": 0, "queue_depth": 0, "bytes_in": answered * 65536, "bytes_out": 0,
        "timing": {"write": {"answered": answered, "queue_ns": answered * 10_000,
                             "storage_ns": answered * ns, "server_ns": answered * (ns + 50_000),
                             "server_hist_us": [], "storage_hist_us": [[ns / 1000, answered]]}},
        "kernel": {"device": {"dir": f"/d/{node}", "dev": "7:1", "disk": "7:1",
                              "name": device or f"loop{node[-1]}"}},
    }  # fmt: skip


def iostat(slow: dict[str, float]) -> str:
    """Two reports (the since-boot one, then the interval's) of the four loop
    devices; ``slow``: the fourth's w_await, wkB/s and util."""

    def disk(name: str, w_await: float, wkb: float, util: float) -> dict[str, Any]:
        return {"disk_device": name, "r/s": 0.0, "w/s": 200.0, "rkB/s": 0.0, "wkB/s": wkb,
                "r_await": 0.0, "w_await": w_await, "aqu-sz": 0.2, "util": util}  # fmt: skip

    reports = []
    for second in (0, 1):
        stamp = datetime.fromtimestamp(START + second, UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")
        disks = [disk(f"loop{i}", 1.0, 12_800.0, 30.0) for i in range(3)]
        disks.append(disk("loop3", slow["w_await"], slow["wkb"], slow["util"]))
        reports.append({"timestamp": stamp, "disk": disks})
    return json.dumps({"sysstat": {"hosts": [{"nodename": "n", "statistics": reports}]}})


def reading(
    at_s: float, answered: int, slow_storage_ms: float, device: str | None = None
) -> Reading:
    status = PhaseStatus(0, "write", "running", START * 10**9, 1 << 30)
    daemons = {node: stats(node, answered, slow_storage_ms if node == "local3" else 1.0, device)
               for node in NODES}  # fmt: skip
    return Reading(int((START + at_s) * 1e9), status, daemons=daemons)


def judged(slow: dict[str, float], slow_storage_ms: float, device: str | None = None) -> Any:
    report = parse_iostat_json(iostat(slow), "iostat on n")
    devices = LiveDevices(lambda host: report)
    run = PhaseRun.begin(reading(0.2, 0, 1.0, device), Rule(), {}, devices)
    after = reading(1.2, 200, slow_storage_ms, device)
    figures = run.between(None, run.first, after)  # type: ignore[arg-type]
    node = figures["local3"]
    return node, where(node, [f for name, f in figures.items() if name != "local3"])


def test_a_slow_await_names_the_device_with_its_figures() -> None:
    node, found = judged({"w_await": 84.0, "wkb": 12_800.0, "util": 99.0}, 86.0)
    assert (node.await_ms, node.util_pct) == (84.0, 99.0)
    assert found.layer == "device", found.sentence
    assert found.sentence == "device await +83 ms (util 99 %): the device itself is slow"
    assert "device await 84 ms vs 1 ms on the others" in found.evidence


def test_a_device_moving_far_more_than_the_daemon_names_contention_from_outside() -> None:
    node, found = judged({"w_await": 84.0, "wkb": 400_000.0, "util": 100.0}, 86.0)
    assert node.device_mb_s is not None and node.device_mb_s > 400
    assert found.layer == "contention", found.sentence
    assert "the device busy with others' I/O: 410 MB/s on it against the job's own 13.1 MB/s" in (
        found.sentence
    )
    assert found.sentence.endswith("contention from outside the job")


def test_the_other_daemons_on_the_same_device_are_the_job_s_own_i_o_not_contention() -> None:
    # Four daemons of one host on one disk: its bytes are theirs (4 x 13.1 MB/s).
    _, found = judged({"w_await": 1.1, "wkb": 51_200.0, "util": 100.0}, 86.0, device="loop3")
    assert found.layer == "kernel", found.sentence
    assert "contention" not in found.sentence


def test_a_slow_storage_op_over_a_normal_await_is_the_kernel_with_the_await_quoted() -> None:
    _, found = judged({"w_await": 1.1, "wkb": 12_800.0, "util": 30.0}, 86.0)
    assert found.sentence.startswith(
        "storage op +85 ms while the device's await is normal (1.1 ms vs 1 ms on the others)"
    ), found.sentence
    assert "no iostat of the device" not in found.sentence


def test_without_iostat_of_the_node_s_device_its_figures_say_none() -> None:
    report = parse_iostat_json(iostat({"w_await": 1.0, "wkb": 1.0, "util": 1.0}), "iostat on n")
    devices = LiveDevices(lambda host: None if host == "elsewhere" else report)
    loop3 = {"device": {"name": "loop3"}}
    assert devices.figures("elsewhere", loop3, START, START + 1, None) is None
    assert devices.figures("n", {"device": {"name": "vdz"}}, START, START + 1, None) is None
    assert devices.figures("n", {}, START, START + 1, None) is None
