"""Analysis of BenchFS runs: loaders, statistics and reports over DataFrames."""
