"""Stop at pass: the train activity judges each evaluation checkpoint as it is kept, and tells
the training child to stop once one passes.

From `min_share` of the budget on (and before the end), the kept checkpoint's episodes (its
10th-percentile, median and 90th-percentile returns) are judged as the session's judge would
judge the final episode: the built-in code judge here, LLM-written judge code in a judge child
(the sandbox). When their mean score reaches the pass threshold, the marker `STOP` appears in
the training child's output folder; the engine reads it after its next update, ends training
there, and the final evaluation confirms (or not) what the checkpoint showed. A judge that
fails on a checkpoint only logs: the run then trains its whole budget.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from activities.artifacts import ArtifactStore
from activities.runner.protocol import ChildFailed, ChildRequest
from activities.training.eval_checkpoints import PICKS, STOP, checkpoint_folder, write_marker
from workflows.contracts.training import StopAtPass

JUDGE_TIMEOUT_S = 120.0


class Stopper:
    """Judges a run's kept checkpoints against `rule` and writes the stop marker into `out`."""

    def __init__(self, rule: StopAtPass, env_id: str, out: Path, log: Any) -> None:
        self.rule, self.env_id, self.out, self.log = rule, env_id, out, log
        self.stopped_at: int | None = None
        self.scores: dict[int, float] = {}

    async def checkpoint_kept(self, pct: int) -> None:
        """Judge the checkpoint kept at `pct`% and stop training when it passes."""
        if self.stopped_at is not None or pct >= 100 or pct < 100 * self.rule.min_share:
            return
        paths = [checkpoint_folder(self.out, pct) / f"{name}.npz" for name, _ in PICKS]
        try:
            scores = await self._scores(paths)
        except (ChildFailed, ValueError, OSError) as exc:
            self.log.warning("checkpoint not judged", pct=pct, error=str(exc)[:300])
            return
        score = sum(scores) / len(scores)
        self.scores[pct] = round(score, 4)
        if score >= self.rule.pass_threshold:
            self.stopped_at = pct
            write_marker(self.out / STOP, {"pct": pct, "score": round(score, 4)})
            self.log.info("checkpoint passed: stopping training", pct=pct, score=round(score, 4))
        else:
            self.log.info("checkpoint judged", pct=pct, score=round(score, 4))

    async def _scores(self, paths: list[Path]) -> list[float]:
        if self.rule.judge_key is None:
            from activities.judging.code_judge import judge_trajectory

            return [
                (
                    await asyncio.to_thread(
                        judge_trajectory, p, self.env_id, self.rule.criteria, 1.0
                    )
                ).score
                for p in paths
            ]
        return await self._code_scores(paths)

    async def _code_scores(self, paths: list[Path]) -> list[float]:
        from activities.judging.job import JUDGE
        from activities.runner.supervisor import run_child

        assert self.rule.judge_key is not None
        source = await asyncio.to_thread(ArtifactStore().get_text, self.rule.judge_key)
        child = ChildRequest(
            env_id=self.env_id,
            judge_source=source,
            judge_filename=Path(self.rule.judge_key).name,
            criteria=[c.name for c in self.rule.criteria],
            trajectory_path=str(paths[0]),
            extra_trajectories=[str(p) for p in paths[1:]],
        )
        folder = self.out.parent / "judge" / paths[0].parent.name
        result = await run_child(JUDGE, child, folder, timeout_s=JUDGE_TIMEOUT_S)
        return [float(result["judgment"]["score"]), *map(float, result["extra_scores"])]
