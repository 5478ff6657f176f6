"""`policyforge check-reward` / `check-judge`: the sandbox's verdict on a file, before a session.

The static check runs here (it only parses); the code itself runs only in the confined child:
reward code on a short random-action episode of the real environment, judge code on exactly the
validation a session runs (the episodes that must not pass, activities/training/contrasts.py,
decided by activities/training/judge_validation.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from activities.behaviours.measured import checked
from activities.runner.protocol import ChildFailed, ChildJob, ChildRequest
from activities.runner.supervisor import run_child
from activities.sandbox.reward_code import without_own_import
from activities.sandbox.static_check import SandboxViolation, check_source
from activities.training import job
from workers.local.train import _run_sync
from workflows.contracts.judging import Criterion

ZERO_REWARD = 'def reward_fn(obs, action, next_obs, info):\n    return 0.0, {"zero": 0.0}\n'
CHECK_TIMEOUT_S = 180.0


class CheckFailed(Exception):
    """The one-line reason a file does not pass; `code_fault`: the code's own (it goes back to
    its author), not this machine's."""

    def __init__(self, message: str, code_fault: bool = True) -> None:
        super().__init__(message)
        self.code_fault = code_fault


def _read(path: Path, reward: bool = True) -> str:
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckFailed(f"{path} cannot be read: {exc}", code_fault=False) from None
    try:
        # A reward file may import its base class from policyforge (the sandbox predefines it).
        check_source(without_own_import(source) if reward else source, path.name)
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
        raise CheckFailed(exc.message, code_fault=exc.reward_fault) from None


def check_reward(path: Path, env_id: str, steps: int, scratch: Path) -> dict[str, Any]:
    """{"steps", "term_magnitudes", "sandbox"} or CheckFailed."""
    source = _read(path)
    req = ChildRequest(env_id=env_id, reward_source=source, reward_filename=path.name, steps=steps)
    return _run(job.VALIDATE, req, scratch)


def read_criteria(path: Path, env_id: str) -> list[Criterion]:
    """The criteria in a JSON file (a list of criteria, or {"criteria": [...]}, each as the
    elicitor gives them); CheckFailed in one line naming the field."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckFailed(f"--criteria: {path} cannot be read: {exc}", code_fault=False) from None
    except json.JSONDecodeError as exc:
        raise CheckFailed(f"--criteria: {path} is not JSON: {exc}", code_fault=False) from None
    items = raw.get("criteria") if isinstance(raw, dict) else raw
    if not isinstance(items, list) or not items:
        raise CheckFailed(
            f'--criteria: {path} must hold a non-empty list of criteria (or {{"criteria": '
            "[...]}})",
            code_fault=False,
        )
    out: list[Criterion] = []
    for i, item in enumerate(items, 1):
        try:
            c = Criterion.model_validate(item)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "item"
            raise CheckFailed(
                f"--criteria: criterion {i} field {field}: {err['msg']}", code_fault=False
            ) from None
        try:
            c = checked(c, env_id)
        except ValueError as exc:
            raise CheckFailed(f"--criteria: criterion {i} {exc}", code_fault=False) from None
        out.append(c)
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise CheckFailed(f"--criteria: criterion names repeat: {names}", code_fault=False)
    return out


def check_judge(
    path: Path,
    env_id: str,
    criteria: list[Criterion],
    scratch: Path,
    reward: Path | None = None,
    steps: int = 0,
) -> dict[str, Any]:
    """A session's judge validation of the file: {"problem": why it is sent back or None,
    "episodes", "steps", "sandbox"}; the episodes carry `reward`'s terms (default: a zero
    reward). CheckFailed when it cannot run (its code_fault says whose the fault is)."""
    from activities.training.judge_validation import judge_problem

    judge_source = _read(path, reward=False)
    reward_source = _read(reward) if reward else ZERO_REWARD
    names = [c.name for c in criteria]
    req = ChildRequest(
        env_id=env_id,
        reward_source=reward_source,
        reward_filename=reward.name if reward else "zero_reward.py",
        judge_source=judge_source,
        judge_filename=path.name,
        criteria=names,
        judge_criteria=criteria,
        steps=steps,
    )
    out = _run(job.VALIDATE_JUDGE, req, scratch)
    return {**out, "problem": judge_problem(out["episodes"], criteria, names)}
