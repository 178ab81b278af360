"""Side-by-side benchmarks: the engine against a reference tool in one run."""
