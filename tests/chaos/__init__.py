"""The chaos drill (`python -m tests.chaos`): fault and load scenarios against a real local stack,
as figures.

A `Stack` (stack.py) is a Temporal dev server and SeaweedFS of its own, the three worker pools
as OS processes and the fake LLM server of the test suite; each scenario (scenarios.py) runs
sessions on it while it injects a fault, checks that nothing was lost (checks.py) and returns
one `Row` (report.py). It is a tool of the test suite, run from a checkout with the `dev` and
`local` extras: it uses the suite's fake LLM server and process helpers, which the product (and
its image) does not carry. CI runs its short form as tests/e2e/test_chaos.py.
"""
