"""The OS layers of the sandbox by name: which are required, and the setting that accepts a
weaker sandbox knowingly. Shared by the sandbox process (which applies them), its client (which
refuses generated code when a required one is missing) and the workers' start-up probe.
"""

from __future__ import annotations

import os

# name -> what it stops (the README's table says the same).
LAYERS: dict[str, str] = {
    "clean-env": "secrets: the environment holds no keys or credentials",
    "rlimits": "memory, threads, CPU time, file and scratch size, open files; core dumps",
    "landlock-fs": "files: read-only libraries, read-write scratch, nothing else (no /proc)",
    "landlock-net": "TCP bind and connect",
    "landlock-scope": "signals and abstract unix sockets to processes outside the sandbox",
    "seccomp": "exec, fork, sockets, ptrace, signals to others, namespaces and mounts",
    "identity": "a uid of its own (under a root worker) or a user namespace of its own",
    "netns": "a network namespace of its own: no interfaces",
}
# Without these the boundary does not hold on its own: generated code is refused.
REQUIRED = ("clean-env", "rlimits", "landlock-fs", "seccomp")
ALLOW_MISSING_VAR = "POLICYFORGE_SANDBOX_ALLOW_MISSING"
# Tests only: skip applying these layers, as a platform without them would.
TEST_DISABLE_VAR = "POLICYFORGE_SANDBOX_TEST_DISABLE"


class SandboxUnavailable(RuntimeError):
    """A required layer could not be applied; the message is one line naming it and the
    setting that accepts it missing."""


def _names(var: str) -> set[str]:
    return {n.strip() for n in os.environ.get(var, "").split(",") if n.strip()}


def accepted_missing() -> set[str]:
    """The layers an operator accepts missing (POLICYFORGE_SANDBOX_ALLOW_MISSING)."""
    return _names(ALLOW_MISSING_VAR)


def disabled_for_test() -> set[str]:
    """The layers a test asks not to apply (POLICYFORGE_SANDBOX_TEST_DISABLE)."""
    return _names(TEST_DISABLE_VAR)


def refusal(missing: dict[str, str]) -> str | None:
    """The one-line refusal when a required layer is missing and not accepted, else None."""
    accepted = accepted_missing()
    for name in REQUIRED:
        if name in missing and name not in accepted:
            return (
                f"sandbox layer '{name}' is not available here ({missing[name]}); generated "
                f"code refused. Set {ALLOW_MISSING_VAR}={name} to accept a weaker sandbox "
                "knowingly"
            )
    return None


def describe(applied: list[str], missing: dict[str, str]) -> str:
    """One line for logs and check-reward: 'landlock-fs, seccomp, ... (missing: netns: why)'."""
    line = ", ".join(applied) or "none"
    if missing:
        line += " (missing: " + "; ".join(f"{k}: {v}" for k, v in missing.items()) + ")"
    return line
