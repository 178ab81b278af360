"""Results directories built from real tool output for the analysis tests."""

from analysis_support import fio_text, iostat_text, run_dir

__all__ = ["fio_text", "iostat_text", "run_dir"]
