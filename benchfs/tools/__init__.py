"""External storage tools (fio, iostat) run as subprocesses, and what lies behind a directory."""
