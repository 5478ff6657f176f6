"""The sandbox for generated reward and judge code, in layers.

1. `static_check`: the AST is checked before anything runs (allow-listed imports, no dunder
   or introspection attributes, no exec/eval/open/getattr, no format-string field access).
2. `restricted`: the code runs with a small set of builtins and an import hook that only
   returns allow-listed modules.
3. `confine`: it runs only in a child process whose environment holds no secrets, with
   resource limits, no network and no way to start programs (see `os_limits`).
4. `guards`: every call has a time budget, gets read-only copies of simulator state, and its
   result is checked (types, sizes, NaN/inf).

Used by `activities.training.reward_runtime` and `activities.judging.judge_runtime`, which are
only ever imported inside the child (`activities.training.child`).
"""

from activities.sandbox.static_check import SandboxViolation, check_source

__all__ = ["SandboxViolation", "check_source"]
