"""The sandbox for generated reward and judge code.

The boundary is a process of its own (`host`), which confines itself with the OS layers
(`confine`: clean environment, limits, another uid or user namespace, network namespace,
Landlock for files, TCP and scope, a seccomp allow-list in `syscalls`) before it takes any code,
and fails closed when a required layer is missing (`layers`). The trusted side (`client`) starts
it, checks what it reports, and talks to it in frames of JSON and float64 arrays (`wire`); the
reward's and the judge's trusted sides (`reward_client`, `judge_client`) check every answer.

In front of the boundary, filters for honest mistakes with clear one-line messages:
`static_check` (the syntax tree), `restricted` (curated namespaces and builtins) and `guards`
(call budgets, read-only inputs, result checks), all run inside the sandbox process
(`reward_code` with `loaded_reward`, `judge_code`).
"""

from typing import Any

__all__ = ["SandboxViolation", "check_source"]


def __getattr__(name: str) -> Any:
    # Loaded when first asked for: the static check pulls numpy in, and the CLI reaches this
    # package on every command (os_limits) without needing it.
    if name in __all__:
        from activities.sandbox import static_check

        return getattr(static_check, name)
    raise AttributeError(name)
