#!/usr/bin/env python3
"""`benchfs bench scale --hosts` on network-namespace hosts: a tiny `benchfs run`
on 4, 8 and 16 hosts of this machine, timed step by step, and the growth of
each step fitted (`benchfs.bench.scale_hosts`).

Each host is a network namespace with its own address on a private bridge,
entered by mpirun's remote agent (the test suite's hosts,
tests/launchers/netns_hosts.py); the daemons and ranks start through
mpirun, UCX over tcp between the hosts, 4 ranks a host. Everything is
removed afterwards. Needs root, iproute2 and OpenMPI's mpirun.

Usage: .venv/bin/python benchmarks/netns_scale.py [--hosts 4 8 16] [--ranks-per-host 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from launchers.netns_hosts import namespace_hosts_fixture  # noqa: E402

from benchfs.bench.scale import SUPERLINEAR  # noqa: E402
from benchfs.bench.scale_hosts import run_hosts_scale_bench  # noqa: E402
from benchfs.cli.bench_display import host_scale_grid  # noqa: E402
from benchfs.cli.console import make_console  # noqa: E402
from benchfs.cli.tables import print_grid  # noqa: E402


class _Temp:
    """What the hosts' fixture asks of pytest's tmp_path_factory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--ranks-per-host", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("network namespaces need root")
    most = max(args.hosts)
    with tempfile.TemporaryDirectory(prefix="benchfs-netns-scale-") as tmp:
        root = Path(tmp)
        hosts_fixture = namespace_hosts_fixture(_Temp(root), count=most)  # type: ignore[arg-type]
        namespace_hosts = next(hosts_fixture)
        try:
            env = {
                **os.environ,
                "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            }
            report = run_hosts_scale_bench(
                namespace_hosts.hosts,
                args.hosts,
                ranks_per_host=args.ranks_per_host,
                settings=namespace_hosts.run_settings(root / "data"),
                directory=root,
                env=env,
                on_progress=lambda step: print(step, file=sys.stderr, flush=True),
            )
        finally:
            hosts_fixture.close()  # the namespaces and the bridge go
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_grid(make_console(), host_scale_grid(report, SUPERLINEAR))


if __name__ == "__main__":
    main()
