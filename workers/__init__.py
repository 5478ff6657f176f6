"""Processes: the `policyforge` CLI, the worker pools, and the embedded dev services."""
