"""Storage health: the diagnose tests, their assessment, cross-node outliers, preflight and the
node-exclusion policy."""
