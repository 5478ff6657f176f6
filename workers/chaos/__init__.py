"""`policyforge chaos`: fault and load scenarios against a real local stack, as figures.

A `Stack` (stack.py) is a Temporal dev server and SeaweedFS of its own, the three worker pools
as OS processes and the fake LLM server of the test suite; each scenario (scenarios.py) runs
sessions on it while it injects a fault, checks that nothing was lost (checks.py) and returns
one `Row` (report.py). The chaos command runs from a checkout: it uses the test suite's fake
LLM server and process helpers (tests/), which an installed package does not carry.
"""
