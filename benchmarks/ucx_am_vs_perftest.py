#!/usr/bin/env python3
"""Side-by-side AM latency/bandwidth: examples/am_pingpong vs ucx_perftest.

Runs, in alternation within one invocation, `ucx_perftest -t ucp_am_lat`
(4 KiB), `-t ucp_am_bw` (1 MiB) and the am_pingpong example, for each
transport setting (default, UCX_TLS=tcp), ROUNDS times, and prints the
medians, the median of the per-round ratios (each measured side by side)
and the best-of ratios (noise only slows a run down). perftest's latency is half a round trip; it is
doubled here to compare round trips.

The shared-memory round trip is bounded by how fast a cache line crosses
between the two CPUs, and on a virtual machine that depends on where the
host runs the two virtual CPUs at the moment (it changes between runs).
So each latency pair is bracketed by examples/core_to_core (a cache-line
round trip between CPUs 0 and 1), the tools take turns going first, and
the latency ratio is also given over the rounds whose placement held
(core-to-core before and after within 1.5x of each other). --pin C,S pins
the client to CPU C and the responder to CPU S, the same for both tools.

UCX 1.13's ucp_am_lat never reads the payload it receives (later
perftests copy it by default); an RPC must deliver it. So each round also
runs the example with --recv-copy (both sides copy each received 4 KiB
out of UCX's buffer), the floor for a round trip that delivers the data.

Usage: .venv/bin/python benchmarks/ucx_am_vs_perftest.py [--rounds 3] [--lat-iters 100000]
       [--bw-iters 2000] [--pin 0,1] [--examples-dir benchfs_native/target/release/examples]
ucx_perftest and the examples run through benchfs.tools (the project's Python);
`make examples` builds the examples. `benchfs bench rpc` runs the same
references beside the engine's RPC layer.
"""

import argparse
import os
import statistics
from pathlib import Path

from benchfs.bench.placement import Placement
from benchfs.errors import ToolError
from benchfs.tools.ucx_examples import core_to_core_ns, find_examples, run_am_pingpong
from benchfs.tools.ucx_perftest import run_perftest


def ours(examples, lat_iters, bw_iters, env, pin, **options):
    return run_am_pingpong(
        examples.am_pingpong,
        lat_iterations=lat_iters,
        bw_iterations=bw_iters,
        cpus=pin,
        env=env,
        **options,
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lat-iters", type=int, default=100000)
    ap.add_argument("--bw-iters", type=int, default=2000)
    repo = Path(__file__).resolve().parent.parent
    ap.add_argument(
        "--examples-dir",
        type=Path,
        default=repo / "benchfs_native/target/release/examples",
        help="where am_pingpong and core_to_core are (make examples builds them)",
    )
    ap.add_argument("--pin", default=None, help="CLIENT_CPU,SERVER_CPU for both tools")
    a = ap.parse_args()
    pin = tuple(int(c) for c in a.pin.split(",")) if a.pin else None
    try:
        examples = find_examples(a.examples_dir)
    except ToolError as error:
        ap.exit(2, f"error: {error}\n")
    c2c_bin = examples.core_to_core
    for label, extra in (("default", {}), ("UCX_TLS=tcp", {"UCX_TLS": "tcp"})):
        env = dict(os.environ)
        env.pop("UCX_TLS", None)
        env.update(extra)
        pt_rtt, pt_bw, our_p50, our_p99, our_bw, c2c = [], [], [], [], [], []
        copy_p50 = []
        for i in range(a.rounds):
            before = core_to_core_ns(c2c_bin)
            # Take turns going first.
            if i % 2:
                r = ours(examples, a.lat_iters, a.bw_iters, env, pin)
            lat = run_perftest("ucp_am_lat", 4096, a.lat_iters, env=env, timeout_s=300, cpus=pin)
            if i % 2 == 0:
                r = ours(examples, a.lat_iters, a.bw_iters, env, pin)
            pt_rtt.append(lat.rtt_p50_us)
            our_p50.append(r.rtt_p50_us)
            our_p99.append(r.rtt_p99_us)
            our_bw.append(r.bandwidth_MiBps)
            copied = ours(examples, a.lat_iters, 10, env, pin, recv_copy=True, bw_size=4096)
            copy_p50.append(copied.rtt_p50_us)
            c2c.append((before, core_to_core_ns(c2c_bin)))
            bw = run_perftest("ucp_am_bw", 1 << 20, a.bw_iters, env=env, timeout_s=300, cpus=pin)
            pt_bw.append(bw.bandwidth_MiBps)
        m = statistics.median
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(
            f"[{label}] rounds={a.rounds} lat_iters={a.lat_iters} bw_iters={a.bw_iters} "
            f"loadavg_after={load}"
        )
        lat_ratio = [o / p for o, p in zip(our_p50, pt_rtt, strict=True)]
        bw_ratio = [o / p for o, p in zip(our_bw, pt_bw, strict=True)]
        print(
            f"  4 KiB round trip p50 us: perftest {m(pt_rtt):.3f} (2 x half-RTT), "
            f"am_pingpong {m(our_p50):.3f} (p99 {m(our_p99):.3f}); "
            f"ratio of medians {m(our_p50) / m(pt_rtt):.2f}x, "
            f"median per-round ratio {m(lat_ratio):.2f}x, "
            f"best-of ratio {min(our_p50) / min(pt_rtt):.2f}x (target <= 2)"
        )
        print(
            f"  1 MiB bandwidth MiB/s: perftest {m(pt_bw):.0f}, am_pingpong {m(our_bw):.0f}; "
            f"ratio of medians {m(our_bw) / m(pt_bw):.2f}x, "
            f"median per-round ratio {m(bw_ratio):.2f}x, "
            f"best-of ratio {max(our_bw) / max(pt_bw):.2f}x (target >= 0.8)"
        )
        steady = [r for r, (b, e) in enumerate(c2c) if Placement(b, e).steady]
        if steady:
            print(
                f"  4 KiB round trip over the {len(steady)} rounds with a steady placement: "
                f"median per-round ratio {m(lat_ratio[r] for r in steady):.2f}x"
            )
        print(
            f"  4 KiB round trip delivering the data (--recv-copy): am_pingpong "
            f"{m(copy_p50):.3f} us, {m(c / p for c, p in zip(copy_p50, pt_rtt, strict=True)):.2f}x "
            "perftest's (which does not read it)"
        )
        print(f"  per round: core-to-core ns (before, after) {c2c}")
        print(f"  per round: perftest rtt {pt_rtt} bw {pt_bw}")
        print(f"             ours rtt p50 {our_p50} p99 {our_p99} bw {our_bw}")
        print(f"             ours --recv-copy rtt p50 {copy_p50}")


if __name__ == "__main__":
    main()
