"""Tool outputs (IOR, mdtest, fio) as the phase rows of ``workload/summary.json``."""
