"""Readers that turn result files into DataFrames."""
