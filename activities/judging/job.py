"""The judging stage's runner: LLM-written judge code on an evaluation's trajectories.

    python -m activities.judging.job judge --request REQ.json --out DIR

Judges the request's trajectory and its extra ones (evaluation checkpoints) with the same code
in one sandbox process; the harness (`activities.runner.child`) does the rest. Supervisors
start it by its `ChildJob`, `JUDGE`; importing this module for that is light.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from activities.runner import child
from activities.runner.protocol import ChildJob, ChildRequest

MODULE = "activities.judging.job"
JUDGE = ChildJob(MODULE, "judge")


def _judge(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    from activities.sandbox.judge_client import judge_all
    from activities.sandbox.judge_code import load_trajectory

    if req.trajectory_path is None:
        raise ValueError("judge needs trajectory_path")
    paths = [req.trajectory_path, *req.extra_trajectories]
    trajectories = [load_trajectory(Path(p)) for p in paths]
    if req.judge_source is None:
        raise ValueError("judge modes need judge_source")
    judged = judge_all(
        run.sandbox(),
        req.judge_source,
        req.judge_filename,
        trajectories,
        req.criteria,
        python_layers=req.python_layers,
    )
    # Checked answers only: the verdicts and scores are computed on the trusted side.
    return {"judgment": judged[0], "extra": judged[1:]}


MODES: dict[str, child.ModeSpec] = {
    # All it needs (the sandbox client, judge_code) the harness loads before confining.
    "judge": child.ModeSpec(_judge, short=True),
}

if __name__ == "__main__":
    sys.exit(child.main(MODULE, MODES))
