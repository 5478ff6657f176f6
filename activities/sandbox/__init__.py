"""The sandbox for generated reward and judge code.

The boundary is a process of its own (`host`), which confines itself with the OS layers
(`confine`: clean environment, limits, another uid or user namespace, network namespace,
Landlock for files, TCP and scope, a seccomp allow-list in `syscalls`) before it takes any code,
and fails closed when a required layer is missing (`layers`). The trusted side (`client`) starts
it, checks what it reports, and talks to it in frames of JSON and float64 arrays (`wire`).

In front of the boundary, filters for honest mistakes with clear one-line messages:
`static_check` (the syntax tree), `restricted` (curated namespaces and builtins) and `guards`
(call budgets, read-only inputs, result checks), all run inside the sandbox process
(`reward_code`, `judge_code`).
"""

from activities.sandbox.static_check import SandboxViolation, check_source

__all__ = ["SandboxViolation", "check_source"]
