"""`benchfs run`: orchestration of a run and of a sweep (docs/ARCHITECTURE.md,
"The flow of benchfs run").

``benchfs.run.orchestrate`` is the entry. What runs on the nodes is a node
program (``benchfs.node``) started with the argv of ``benchfs.launchers.programs``.
"""
