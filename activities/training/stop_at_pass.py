"""Stop at pass: the train activity judges each evaluation checkpoint as it is kept, and tells
the training child to stop once one passes.

From `min_share` of the budget on (and before the end), the kept checkpoint's episodes (its
10th-percentile, median and 90th-percentile returns) are scored by the session's judge, through
the scorer the train pool's worker hands over (`use_scorer`: the judging stage's
`score_checkpoint`; the stages never import each other). When every one of them reaches the
pass threshold, the marker `STOP` appears in the training child's output folder; the engine reads it
after its next update, ends training there, and the final evaluation confirms (or not) what the
checkpoint showed. A judge that fails on a checkpoint only logs, and so does a worker with no
scorer: the run then trains its whole budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildFailed
from activities.training.eval_checkpoints import PICKS, STOP, checkpoint_folder, write_marker
from workflows.contracts.training import StopAtPass

# (rule, env_id, episode files, a folder to work in) -> each episode's score.
Scorer = Callable[[StopAtPass, str, list[Path], Path], Awaitable[list[float]]]
_SCORER: list[Scorer] = []


def use_scorer(scorer: Scorer) -> None:
    """The checkpoint scorer this process's train activities use (set by the train pool)."""
    _SCORER[:] = [scorer]


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
        if not _SCORER:
            self.log.warning("checkpoint not judged: this worker has no checkpoint scorer")
            return
        folder = checkpoint_folder(self.out, pct)
        episodes = [folder / f"{name}.npz" for name, _ in PICKS]
        try:
            scores = await _SCORER[0](
                self.rule, self.env_id, episodes, self.out.parent / "judge" / folder.name
            )
        except (ChildFailed, ValueError, OSError) as exc:
            self.log.warning("checkpoint not judged", pct=pct, error=str(exc)[:300])
            return
        # Every kept episode must pass, the worst (p10) included: the final evaluation is one
        # more episode, and a checkpoint passing only on average would often not be confirmed.
        score = min(scores)
        self.scores[pct] = round(score, 4)
        if score >= self.rule.pass_threshold:
            self.stopped_at = pct
            write_marker(self.out / STOP, {"pct": pct, "score": round(score, 4)})
            self.log.info("checkpoint passed: stopping training", pct=pct, score=round(score, 4))
        else:
            self.log.info("checkpoint judged", pct=pct, score=round(score, 4))
