"""The layer that adds a slow node's time, on figures shaped as a run has them:
ms per op as the live sampler gives them, the ``kernel`` object as a daemon's
stats reply carries it (docs/RPC.md, "Kernel"; real replies in
tests/daemon/test_daemon_kernel.py)."""

from __future__ import annotations

from typing import Any

from benchfs.health.kernel_evidence import kernel_interval
from benchfs.health.layers import LayerSample, attribute

MIB = 1 << 20


def _kernel(
    *,
    run_ns: int = 9_000_000_000,
    run_delay_ns: int = 300_000_000,
    io_limits: dict[str, Any] | None = None,
    cpu: dict[str, Any] | None = None,
    memory_some: float = 0.0,
    io_some: float = 2.41,
    pgscan: int = 0,
) -> dict[str, Any]:
    """A daemon's ``kernel`` object (the keys and types the engine writes)."""

    def psi(some: float) -> dict[str, Any]:
        line = {"avg10": some, "avg60": some / 2, "avg300": some / 4, "total_us": 7_074_000}
        return {"some": line, "full": {**line, "avg10": some / 2}}

    return {
        "time_ns": 81_234_000_000,
        "device": {"dir": "/tmp/benchfs-0/local3", "dev": "254:0", "disk": "254:0", "name": "vda"},
        "cgroup": {
            "v1": {"blkio": "/benchfs-slow" if io_limits else "/", "cpu": "/"},
            "v2": "/",
            "io_limits": io_limits,
            "cpu": cpu,
        },
        "pressure": {"io": psi(io_some), "cpu": psi(1.0), "memory": psi(memory_some)},
        "process": {
            "threads": 5,
            "run_ns": run_ns,
            "run_delay_ns": run_delay_ns,
            "timeslices": 120_000,
        },
        "cpu": {"cpus": 2, "steal_ticks": 33, "total_ticks": 64_779, "procs_running": 3},
        "memory": {"pgscan": pgscan, "pgsteal": pgscan},
    }


THROTTLE = {
    "source": "blkio.throttle",
    "cgroup": "/benchfs-slow",
    "read_bps": 20 * MIB,
    "write_bps": 20 * MIB,
    "read_iops": None,
    "write_iops": None,
}


def _healthy(**changes: Any) -> LayerSample:
    figures: dict[str, Any] = {
        "ops": 4_000,
        "client_ms": 2.6,
        "server_ms": 1.9,
        "queue_ms": 0.3,
        "storage_op_ms": 1.1,
        "rtt_ms": 0.05,
        "await_ms": 1.0,
        "util_pct": 40.0,
        "device_mb_s": 420.0,
        "job_mb_s": 410.0,
        "kernel": _kernel(),
    }
    return LayerSample(**{**figures, **changes})


OTHERS = [_healthy(), _healthy(storage_op_ms=1.0, client_ms=2.4), _healthy(storage_op_ms=1.2)]


def test_the_issue_s_throttled_node_is_the_kernel_with_the_cgroup_limit_quoted() -> None:
    slow = _healthy(
        client_ms=262.0,
        server_ms=251.0,
        queue_ms=56.0,
        storage_op_ms=194.1,
        kernel=_kernel(io_limits=THROTTLE),
    )
    found = attribute(slow, OTHERS)
    assert found.layer == "kernel" and not found.software
    assert found.sentence == (
        "storage op +193 ms while the device's await is normal (1 ms vs 1 ms on the others): "
        "delayed in the kernel above the device; the daemon's cgroup caps reads on vda at "
        "20 MiB/s and writes on vda at 20 MiB/s (blkio.throttle of /benchfs-slow)"
    )
    assert "storage op 194 ms vs 1.1 ms on the others" in found.evidence
    assert "software" not in found.sentence
    kernel = next(row for row in found.layers if row.layer == "kernel")
    assert kernel.extra is not None and kernel.extra > 190


def test_a_slow_storage_op_without_a_limit_is_still_the_kernel_not_the_software() -> None:
    slow = _healthy(
        client_ms=120.0,
        server_ms=110.0,
        queue_ms=10.0,
        storage_op_ms=98.0,
        kernel=_kernel(io_some=35.0),
    )
    found = attribute(slow, OTHERS)
    assert found.layer == "kernel"
    assert found.sentence.endswith(
        "delayed in the kernel above the device (the node's io pressure some avg10 35 %)"
    )


def test_a_slow_await_is_the_device_and_a_device_busy_with_others_i_o_is_contention() -> None:
    slow = _healthy(
        client_ms=90.0, server_ms=88.0, storage_op_ms=86.0, await_ms=84.0, util_pct=99.0
    )
    found = attribute(slow, OTHERS)
    assert found.layer == "device"
    assert found.sentence == "device await +83 ms (util 99 %): the device itself is slow"

    busy = _healthy(
        client_ms=90.0,
        server_ms=88.0,
        storage_op_ms=86.0,
        await_ms=84.0,
        util_pct=99.0,
        device_mb_s=1_650.0,
        job_mb_s=48.0,
    )
    found = attribute(busy, OTHERS)
    assert found.layer == "contention"
    assert "1,650 MB/s on it against the job's own 48 MB/s" in found.sentence
    assert found.sentence.endswith("contention from outside the job")
    row = next(row for row in found.layers if row.layer == "contention")
    assert row.node == 1_602.0 and row.unit == "MB/s not the job's"


def test_a_device_busy_with_others_i_o_holds_the_time_above_it_as_contention() -> None:
    # A loop device saturated by an outside writer: the job's requests wait in its file
    # system and block layer, the device's own await rises little.
    busy = _healthy(client_ms=32.0, server_ms=30.0, storage_op_ms=29.6, await_ms=1.9,
                    util_pct=100.0, device_mb_s=1_740.0, job_mb_s=8.4)  # fmt: skip
    found = attribute(busy, OTHERS)
    assert found.layer == "contention", found.sentence
    assert found.sentence == (
        "storage op +28.5 ms while the device's await is normal (1.9 ms vs 1 ms on the "
        "others) with the device busy with others' I/O: 1,740 MB/s on it against the job's "
        "own 8.4 MB/s (util 100 %): contention from outside the job"
    )
    # The same storage op on a device moving only the job's bytes stays the kernel's.
    alone = _healthy(client_ms=32.0, server_ms=30.0, storage_op_ms=29.6, await_ms=1.9,
                     util_pct=100.0, device_mb_s=9.0, job_mb_s=8.4)  # fmt: skip
    assert attribute(alone, OTHERS).layer == "kernel"


def test_a_slow_round_trip_makes_it_the_network_a_normal_one_the_rpc_layer() -> None:
    delayed = _healthy(client_ms=42.6, rtt_ms=40.1)
    found = attribute(delayed, OTHERS)
    assert found.layer == "network"
    assert found.sentence.startswith(
        "client wait less the daemon's time +40 ms with a round "
        "trip of 40.1 ms vs 0.05 ms on the others"
    )
    assert "round trip 40.1 ms vs 0.05 ms on the others" in found.evidence

    found = attribute(_healthy(client_ms=42.6), OTHERS)
    assert found.layer == "rpc" and found.software
    assert "the software explains it (the engine's RPC layer)" in found.sentence


def test_only_the_daemon_s_queue_is_the_software_explaining_it() -> None:
    found = attribute(_healthy(client_ms=32.0, server_ms=31.3, queue_ms=29.7), OTHERS)
    assert found.layer == "queue" and found.software
    assert found.sentence == (
        "daemon queue +29.4 ms with the storage op and the device normal: the software "
        "explains it (the daemon's queue)"
    )


def test_a_slow_round_trip_under_the_daemon_s_handling_is_the_network() -> None:
    # The live view's case: no client-side times, the sampler's ping to each daemon.
    live = {"client_ms": None, "await_ms": None, "util_pct": None}
    others = [_healthy(**live, rtt_ms=rtt) for rtt in (0.2, 0.25, 0.3)]
    slow = _healthy(**live, server_ms=41.9, rtt_ms=30.0)
    found = attribute(slow, others)
    assert found.layer == "network" and not found.software
    assert found.sentence.startswith(
        "daemon's own handling (its time less queue and storage op) +40 ms with a round trip "
        "of 30 ms vs 0.25 ms on the others: the network between the clients and the daemon"
    )
    # A link slow on bandwidth: the round trip of an empty ping little changed, 64 KiB slow.
    carried = [_healthy(**live, rtt_ms=0.2, bulk_rtt_ms=0.5) for _ in range(3)]
    slow = _healthy(**live, server_ms=41.9, rtt_ms=2.0, bulk_rtt_ms=34.0)
    found = attribute(slow, carried)
    assert found.layer == "network"
    assert "with 64 KiB taking 32 ms more than an empty ping to reach it vs 0.3 ms on the " in (
        found.sentence
    )
    # A round trip that holds little of it, both pings slowed alike: the software.
    found = attribute(_healthy(**live, server_ms=41.9, rtt_ms=2.0, bulk_rtt_ms=2.3), carried)
    assert found.layer == "rpc" and found.software


def test_a_daemon_waiting_for_a_cpu_is_cpu_wherever_its_time_shows() -> None:
    starved = _kernel(run_ns=4_000_000_000, run_delay_ns=6_000_000_000)
    slow = _healthy(
        client_ms=30.0, server_ms=28.0, queue_ms=20.0, storage_op_ms=6.0, kernel=starved
    )
    found = attribute(slow, OTHERS)
    assert found.layer == "cpu"
    assert "the daemon is starved of CPU" in found.sentence
    assert "its threads waited for a CPU 60% of their runnable time vs 3% on the others" in (
        found.sentence
    )
    row = next(row for row in found.layers if row.layer == "cpu")
    assert row.node == 60.0


def test_a_loaded_machine_s_uneven_cpu_waits_are_no_evidence_of_a_starved_daemon() -> None:
    # Every daemon waits on a loaded machine, some more: 43 % against 20 % once named
    # CPU for a node whose time was elsewhere (its queue behind slow storage ops).
    loaded = _kernel(run_ns=5_700_000_000, run_delay_ns=4_300_000_000)
    others = [_healthy(kernel=_kernel(run_ns=8_000_000_000, run_delay_ns=2_000_000_000))] * 3
    slow = _healthy(client_ms=30.0, server_ms=28.0, queue_ms=20.0, storage_op_ms=6.0,
                    await_ms=5.0, kernel=loaded)  # fmt: skip
    found = attribute(slow, others)
    assert found.layer != "cpu" and "starved of CPU" not in found.sentence, found.sentence
    assert not any(row.layer == "cpu" for row in found.layers)
    # A high share that is not a large multiple of the others' is not either...
    high = _kernel(run_ns=4_000_000_000, run_delay_ns=6_000_000_000)
    busy = [_healthy(kernel=_kernel(run_ns=6_000_000_000, run_delay_ns=4_000_000_000))] * 3
    assert (
        attribute(
            _healthy(
                client_ms=30.0,
                server_ms=28.0,
                queue_ms=20.0,
                storage_op_ms=6.0,
                await_ms=5.0,
                kernel=high,
            ),
            busy,
        ).layer
        != "cpu"
    )
    # ...while a cgroup that throttles the daemon is, whatever the others wait.
    quota = {"source": "cpu.max", "cgroup": "/benchfs-cpu", "quota_us": 2_000,
             "period_us": 100_000, "nr_periods": 400, "nr_throttled": 380,
             "throttled_ns": 30_000_000_000}  # fmt: skip
    capped = _kernel(run_ns=5_700_000_000, run_delay_ns=4_300_000_000, cpu=quota)
    found = attribute(_healthy(client_ms=30.0, server_ms=28.0, queue_ms=20.0, kernel=capped),
                      others)  # fmt: skip
    assert found.layer == "cpu" and "throttled it in 95% of its periods" in found.sentence


def test_a_cpu_quota_that_throttles_the_daemon_is_cpu() -> None:
    quota = {
        "source": "cpu.cfs_quota_us",
        "cgroup": "/benchfs-cpu",
        "quota_us": 10_000,
        "period_us": 100_000,
        "nr_periods": 900,
        "nr_throttled": 850,
        "throttled_ns": 80_000_000_000,
    }
    slow = _healthy(client_ms=60.0, server_ms=58.0, queue_ms=40.0, kernel=_kernel(cpu=quota))
    found = attribute(slow, OTHERS)
    assert found.layer == "cpu"
    assert (
        "its cgroup's CPU quota (0.1 CPU cpu.cfs_quota_us 10000 per 100000) throttled it in "
        "94% of its periods" in found.evidence
    )


def test_an_i_o_limit_keeps_the_time_in_the_kernel_even_with_cpu_waits() -> None:
    both = _kernel(io_limits=THROTTLE, run_ns=4_000_000_000, run_delay_ns=6_000_000_000)
    found = attribute(
        _healthy(storage_op_ms=150.0, server_ms=160.0, client_ms=161.0, kernel=both), OTHERS
    )
    assert found.layer == "kernel"
    assert "caps reads on vda at 20 MiB/s" in found.sentence


def test_memory_pressure_on_the_daemon_is_memory() -> None:
    slow = _healthy(
        client_ms=40.0,
        server_ms=39.0,
        queue_ms=30.0,
        kernel=_kernel(memory_some=45.0, pgscan=120_000),
    )
    found = attribute(slow, OTHERS)
    assert found.layer == "memory"
    assert "the node's memory pressure some avg10 45 % vs 0 % on the others" in found.sentence
    assert "the kernel scanned 120,000 pages to reclaim (/proc/vmstat pgscan)" in found.evidence


def test_unknown_where_no_layer_holds_it_or_no_iostat_tells_the_device_from_the_kernel() -> None:
    # Only the clients' side measured (a posix: target: no daemon of ours).
    alone = {"server_ms": None, "queue_ms": None, "storage_op_ms": None, "rtt_ms": None}
    found = attribute(_healthy(client_ms=9.0, **alone), [_healthy(**alone) for _ in range(3)])
    assert found.layer == "unknown"
    assert found.sentence.startswith("client wait +6.4 ms and no layer BenchFS sees holds it")

    found = attribute(_healthy(client_ms=9.0, server_ms=8.9), OTHERS)
    assert found.layer == "rpc"
    assert found.sentence == (
        "daemon's own handling (its time less queue and storage op) +7 ms: the software "
        "explains it (the daemon's handling of a request outside its queue and storage op)"
    )

    blind = [_healthy(await_ms=None, util_pct=None) for _ in range(3)]
    found = attribute(
        _healthy(storage_op_ms=90.0, server_ms=91.0, client_ms=92.0, await_ms=None, util_pct=None),
        blind,
    )
    assert found.layer == "unknown"
    assert found.sentence == (
        "storage op +88.9 ms with no iostat of the device: the device cannot be told from the "
        "kernel above it"
    )


def test_a_read_write_asymmetry_is_the_node_s_slow_op_against_its_fast_one() -> None:
    reads = _healthy(
        client_ms=260.0,
        server_ms=250.0,
        storage_op_ms=194.0,
        queue_ms=50.0,
        kernel=_kernel(io_limits={**THROTTLE, "write_bps": None}),
    )
    found = attribute(reads, [_healthy()])
    assert found.layer == "kernel"
    assert found.sentence.endswith(
        "caps reads on vda at 20 MiB/s (blkio.throttle of /benchfs-slow)"
    )


def test_the_interval_of_two_replies_judges_the_interval_alone() -> None:
    # Healthy for most of the daemon's life, then starved: the cumulative share
    # is low, the last interval's is not.
    before = _kernel(run_ns=100_000_000_000, run_delay_ns=1_000_000_000)
    after = _kernel(run_ns=100_400_000_000, run_delay_ns=1_600_000_000)
    after["time_ns"] = before["time_ns"] + 1_000_000_000
    interval = kernel_interval(before, after)
    assert interval["interval"]["run_delay_ns"] == 600_000_000
    assert interval["interval"]["time_ns"] == 1_000_000_000
    slow = _healthy(client_ms=30.0, server_ms=28.0, queue_ms=20.0)
    assert attribute(LayerSample(**{**slow.__dict__, "kernel": after}), OTHERS).layer == "queue"
    found = attribute(LayerSample(**{**slow.__dict__, "kernel": interval}), OTHERS)
    assert found.layer == "cpu"
    assert "waited for a CPU 60% of their runnable time" in found.sentence
