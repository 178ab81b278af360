"""The history of every run's nodes across runs, in a database (docs/HISTORY.md).

``model`` (the rows) <- ``rows`` and ``diagnose_rows`` (a results directory or a
diagnose report as rows) <- ``store`` (SQLite or PostgreSQL) <- ``status``
(a node's status and reason), ``consult`` (what the preflight makes of it),
``trends`` (a workload's figure over time), ``record`` (writing a run, never
failing it).
"""
