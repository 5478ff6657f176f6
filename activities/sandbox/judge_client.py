"""The judge's trusted side: judge code run in the sandbox process over each trajectory
(`judge_in_sandbox`), and each raw answer checked again here (`judge_all`), never taking the
sandbox's word for the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from activities.sandbox.client import LOAD_TIMEOUT_S, CodeFault, SandboxClient
from activities.sandbox.errors import one_line
from activities.sandbox.judge_code import JudgeLoadError, check_judgment, judge_budget_s


def judge_all(
    box: SandboxClient,
    source: str,
    filename: str,
    trajectories: Sequence[dict[str, np.ndarray]],
    criteria: list[str],
    *,
    python_layers: bool = True,
) -> list[dict[str, Any]]:
    """Each trajectory judged in the sandbox, each answer checked again here (the sandbox's
    word is never taken for the format); JudgeLoadError blames the judge code in one line."""
    try:
        raw = judge_in_sandbox(
            box,
            source,
            filename,
            trajectories,
            criteria,
            python_layers=python_layers,
            timeout_s=judge_budget_s() + 30,
        )
    except CodeFault as exc:
        raise JudgeLoadError(str(exc)) from None
    try:
        return [check_judgment(r, criteria) for r in raw]
    except JudgeLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the answer made fail is the judge's
        raise JudgeLoadError(
            f"{filename}: the judge's sandbox answered out of format "
            f"({type(exc).__name__}: {one_line(str(exc), 120)})"
        ) from None


def judge_in_sandbox(
    box: SandboxClient,
    source: str,
    filename: str,
    trajectories: Sequence[dict[str, np.ndarray]],
    criteria: list[str],
    *,
    python_layers: bool = True,
    timeout_s: float = 90.0,
) -> list[dict[str, Any]]:
    """The judge's raw answers for each trajectory, unchecked (`judge_all` checks them);
    CodeFault when the judge code fails."""
    load = {"op": "load_judge", "source": source, "filename": filename}
    box.call({**load, "python_layers": python_layers}, timeout_s=LOAD_TIMEOUT_S)
    out = []
    for trajectory in trajectories:
        arrays, chunks = [], []
        for name, arr in trajectory.items():
            # A scalar (meta_dt) stays 0-d: ascontiguousarray would make it (1,), which
            # float() refuses in numpy 2.
            arr = np.asarray(arr)
            arr = np.ascontiguousarray(arr) if arr.ndim else arr
            if arr.dtype.kind not in "biufU":
                continue
            arrays.append([name, arr.dtype.str, list(arr.shape)])
            chunks.append(arr.tobytes())
        header = {"op": "judge", "arrays": arrays, "criteria": criteria}
        answer, _ = box.call(header, b"".join(chunks), timeout_s=timeout_s)
        judgment = answer.get("judgment")
        if not isinstance(judgment, dict):
            raise CodeFault("the judge's sandbox answered without a judgment")
        out.append(judgment)
    return out
