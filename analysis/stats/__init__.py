"""Statistics over trace frames: pure functions, DataFrames in, DataFrames out."""
