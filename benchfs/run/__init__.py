"""`benchfs run`: orchestration of a run and of a sweep (DESIGN.md, "The flow").

``benchfs.run.orchestrate`` is the entry; ``benchfs.run.node`` runs on the
nodes and stays free of imports from here so it starts fast.
"""
