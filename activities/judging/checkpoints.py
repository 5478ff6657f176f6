"""Scores of an evaluation checkpoint's kept episodes, for stopping training at pass.

The train pool's worker hands `score_checkpoint` to the training stage
(`activities.training.stop_at_pass.use_scorer`): the episodes are judged as the session's judge
would judge the final one, by the built-in code judge in this process or by LLM-written judge
code in a judge child (the sandbox).
"""

from __future__ import annotations

import asyncio
from pathlib import Path, PurePosixPath

from activities.artifacts import ArtifactStore
from activities.behaviours.measured import verdict_on
from activities.judging.code_judge import judge_trajectory
from activities.judging.job import JUDGE
from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from workflows.contracts.judging import Judgment
from workflows.contracts.training import StopAtPass

JUDGE_TIMEOUT_S = 120.0


async def score_checkpoint(
    rule: StopAtPass, env_id: str, episodes: list[Path], work_dir: Path
) -> list[Judgment]:
    """Each episode's judgment (its verdict, score and measured values) under the session's
    judge; ChildFailed or ValueError when the judge cannot judge them."""
    if rule.judge_key is None:
        return [
            await asyncio.to_thread(judge_trajectory, path, env_id, rule.criteria, 1.0)
            for path in episodes
        ]
    source = await asyncio.to_thread(ArtifactStore().get_text, rule.judge_key)
    child = ChildRequest(
        env_id=env_id,
        judge_source=source,
        judge_filename=PurePosixPath(rule.judge_key).name,
        criteria=[c.name for c in rule.criteria],
        trajectory_path=str(episodes[0]),
        extra_trajectories=[str(p) for p in episodes[1:]],
    )
    result = await run_child(JUDGE, child, work_dir, timeout_s=JUDGE_TIMEOUT_S)
    answers = [result["judgment"], *result.get("extra", [])]

    def verdicts() -> list[Judgment]:
        return [
            verdict_on(a, rule.criteria, str(p), env_id)
            for a, p in zip(answers, episodes, strict=True)
        ]

    return await asyncio.to_thread(verdicts)
