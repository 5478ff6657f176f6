"""`policyforge check-reward` / `check-judge`: the sandbox's verdict on a file, before a session.

The static check runs here (it only parses); the code itself runs only in the confined child,
on a short random-action episode of the real environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildFailed, ChildJob, ChildRequest
from activities.runner.supervisor import run_child
from activities.sandbox.static_check import SandboxViolation, check_source
from activities.training import job
from workers.local.train import _run_sync

ZERO_REWARD = 'def reward_fn(obs, action, next_obs, info):\n    return 0.0, {"zero": 0.0}\n'
CHECK_TIMEOUT_S = 180.0


class CheckFailed(Exception):
    """The one-line reason a file does not pass."""


def _read(path: Path) -> str:
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckFailed(f"{path} cannot be read: {exc}") from None
    try:
        check_source(source, path.name)
    except SandboxViolation as exc:
        raise CheckFailed(str(exc)) from None
    return source


def _run(mode: ChildJob, req: ChildRequest, scratch: Path) -> dict[str, Any]:
    try:
        return _run_sync(
            lambda: run_child(
                mode, req, scratch, timeout_s=CHECK_TIMEOUT_S, timeout_is_reward_fault=True
            )
        )
    except ChildFailed as exc:
        raise CheckFailed(exc.message) from None


def check_reward(path: Path, env_id: str, steps: int, scratch: Path) -> dict[str, Any]:
    """{"steps", "term_magnitudes", "sandbox"} or CheckFailed."""
    source = _read(path)
    req = ChildRequest(env_id=env_id, reward_source=source, reward_filename=path.name, steps=steps)
    return _run(job.VALIDATE, req, scratch)


def check_judge(
    path: Path, env_id: str, steps: int, scratch: Path, reward: Path | None = None
) -> dict[str, Any]:
    """{"steps", "judgment", "sandbox"} or CheckFailed; the episode is scored by `reward`
    (default: a zero reward, so the trajectory's term_* arrays hold one term)."""
    judge_source = _read(path)
    reward_source = _read(reward) if reward else ZERO_REWARD
    req = ChildRequest(
        env_id=env_id,
        reward_source=reward_source,
        reward_filename=reward.name if reward else "zero_reward.py",
        judge_source=judge_source,
        judge_filename=path.name,
        steps=steps,
    )
    return _run(job.VALIDATE_JUDGE, req, scratch)
