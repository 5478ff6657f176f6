"""Loading LLM-written judge code and checking what it returns: the mirror of `reward_code`.

`load_judge` runs only in the sandbox process (`activities.sandbox.host`); `check_judgment` runs
there and again on the trusted side (`judge_client.judge_all`), which never takes the sandbox's
word for the format.

The contract (DESIGN.md): `judge_fn(trajectory) -> {"criteria": {name: score in [0, 1]},
"measured": {name: value}, "diagnosis": str, "failure_tags": [str]}` (an overall "score" may
come too: it is checked against the criteria, never used as the verdict); the trajectory is a
dict of read-only numpy arrays (the evaluation .npz). Judge code measures; the trusted side
decides (workflows/verdict.py). Errors are one line a person or the fixer can act on.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from activities.sandbox import guards
from activities.sandbox.restricted import exec_untrusted
from activities.sandbox.static_check import SandboxViolation


class JudgeLoadError(ValueError):
    """Judge code that cannot be used, or returned something outside the contract."""


JUDGE_CALL_BUDGET_S = 60.0  # one call judges a whole episode (up to 1000 steps)
# A judgment's size, whatever the code returns: it goes into Temporal histories, summaries and
# prompts. Sessions ask for 3-8 criteria; a judge run without a list may name this many.
MAX_CRITERIA = 16
MAX_CRITERION_NAME = 64


def judge_budget_s() -> float:
    """Seconds one judge_fn call may take (POLICYFORGE_SANDBOX_JUDGE_CALL_S overrides it)."""
    return guards.budget_from_env("POLICYFORGE_SANDBOX_JUDGE_CALL_S", JUDGE_CALL_BUDGET_S)


def load_judge(
    source: str, filename: str = "judge_fn.py", *, python_layers: bool = True
) -> Callable[[dict, list[str]], dict[str, Any]]:
    """judge_fn from generated code, loaded through the Python layers (python_layers=False, for
    tests only, uses plain exec) inside the module's budget; the function it returns judges a
    trajectory and checks the judgment against the criteria, both inside judge_fn's budget
    (reading the answer runs the code's own __float__ and __str__, if it has them). Called in
    the sandbox process."""
    guards.register_generated_file(filename)
    with guards.module_budget().holding():
        try:
            if python_layers:
                namespace = exec_untrusted(source, filename, {})
            else:
                namespace = {"__name__": "judge_module"}
                exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - tests only
        except SandboxViolation as exc:
            raise JudgeLoadError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any failure of generated code is reported
            raise JudgeLoadError(
                f"{filename} failed to load: {type(exc).__name__}: {exc}"
            ) from None
        fn = namespace.get("judge_fn")
        if not callable(fn):
            raise JudgeLoadError(f"{filename} defines no judge_fn(trajectory)")
    budget = guards.Budget(judge_budget_s(), "judge_fn")

    def judged(trajectory: dict, criteria: list[str]) -> dict[str, Any]:
        with budget.holding():
            return check_judgment(fn(trajectory), criteria)

    return judged


def load_trajectory(src: bytes | str | Path) -> dict[str, np.ndarray]:
    """The evaluation .npz as a dict of read-only arrays (judge code cannot alter the record)."""
    with np.load(io.BytesIO(src) if isinstance(src, bytes) else src, allow_pickle=False) as npz:
        data = {k: np.array(npz[k]) for k in npz.files}
    for arr in data.values():
        arr.setflags(write=False)
    return data


def _unit(value: Any, what: str) -> float:
    """A score in [0, 1] (a hair outside is rounding, clamped); JudgeLoadError otherwise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise JudgeLoadError(f"{what} must be a number in [0, 1]; got {value!r:.60}") from None
    if not math.isfinite(x) or not -1e-6 <= x <= 1 + 1e-6:
        raise JudgeLoadError(f"{what} must be in [0, 1]; got {x}")
    return min(max(x, 0.0), 1.0)


def check_judgment(out: Any, criteria: list[str]) -> dict[str, Any]:
    """The judge's answer, normalised; JudgeLoadError saying what is wrong with it."""
    if not isinstance(out, dict):
        raise JudgeLoadError(
            "judge_fn must return a dict with criteria, measured, diagnosis, failure_tags; "
            f"got {type(out).__name__}"
        )
    missing = [k for k in ("criteria", "measured", "diagnosis") if k not in out]
    if missing:
        raise JudgeLoadError(f"judge_fn's result lacks {missing}; it has {sorted(out)}")
    scores = out["criteria"]
    if not isinstance(scores, dict):
        raise JudgeLoadError(f"judge_fn's 'criteria' must be a dict; got {type(scores).__name__}")
    absent = [name for name in criteria if name not in scores]
    if absent:
        raise JudgeLoadError(
            f"judge_fn's 'criteria' lacks {absent}; score every criterion by its name"
        )
    tags = out.get("failure_tags") or []
    if not isinstance(tags, list | tuple):
        raise JudgeLoadError(f"judge_fn's 'failure_tags' must be a list; got {type(tags).__name__}")
    if not criteria:
        _bounded_names(scores)
    criterion_scores = {
        str(k): _unit(v, f"criterion {k!r}")
        for k, v in scores.items()
        if not criteria or k in criteria
    }
    measured = _measured(out.get("measured"), criteria)
    unmeasured = [name for name in criteria if name not in measured]
    if unmeasured:
        raise JudgeLoadError(
            f"judge_fn's 'measured' lacks {unmeasured}: return each criterion's physical value "
            "(the mean speed in m/s, a height in m) in 'measured'; the verdict is computed from it"
        )
    return {
        # The judge's own overall score, when it gives one: checked against its criteria at
        # validation, never the verdict (None: it gave none).
        # (None, as the sandbox's own check passes it on: no score.)
        "score": _unit(out["score"], "judge_fn's 'score'")
        if out.get("score") is not None
        else None,
        # The session's criteria only, when it has them: what the judge adds beyond them is
        # not recorded (it would grow the judgment without bound).
        "criteria": criterion_scores,
        "measured": measured,
        "diagnosis": " ".join(str(out["diagnosis"]).split())[:800],
        "failure_tags": [str(t)[:40] for t in list(tags)[:10]],
    }


def _bounded_names(scores: dict[Any, Any]) -> None:
    """With no criteria asked for, the judge's own: at most MAX_CRITERIA short string names."""
    if len(scores) > MAX_CRITERIA:
        raise JudgeLoadError(
            f"judge_fn's 'criteria' names {len(scores)} criteria; at most {MAX_CRITERIA}"
        )
    for name in scores:
        if type(name) is not str or not 0 < len(name) <= MAX_CRITERION_NAME:
            raise JudgeLoadError(
                f"judge_fn's criterion names must be text of 1-{MAX_CRITERION_NAME} characters"
            )


MAX_MEASURED = 1e12  # a physical value beyond this is a bug, not a measurement


def _measured(raw: Any, criteria: list[str]) -> dict[str, float]:
    """The judge's physical value per criterion (optional in the answer; validation asks for
    it): finite numbers for the session's criteria, others left out."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise JudgeLoadError(f"judge_fn's 'measured' must be a dict; got {type(raw).__name__}")
    out: dict[str, float] = {}
    for name in criteria:
        if name not in raw:
            continue
        try:
            x = float(raw[name])
        except (TypeError, ValueError):
            raise JudgeLoadError(
                f"measured value of {name!r} must be a number; got {raw[name]!r:.60}"
            ) from None
        if not math.isfinite(x) or abs(x) > MAX_MEASURED:
            raise JudgeLoadError(f"measured value of {name!r} must be finite; got {x}")
        out[name] = x
    return out


def run_judge(
    source: str, filename: str, trajectory: dict[str, np.ndarray], criteria: list[str]
) -> dict[str, Any]:
    """Load judge code and judge one trajectory in this process: a checked judgment."""
    return load_judge(source, filename)(trajectory, criteria)
