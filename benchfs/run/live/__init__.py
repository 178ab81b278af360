"""The live per-node view of a run (docs/DIAGNOSE.md, "The live view"): every
node sampled about once a second while each phase runs (``sampler``), its
figures per interval (``figures``), the straggler rule and its alerts
(``rule``), the time pattern of a slow node (``patterns``), and the
verdicts the run writes at each phase's end (``verdicts``), wired into the
point as one watch (``watch``)."""
