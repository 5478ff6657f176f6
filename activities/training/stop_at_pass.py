"""Stop at pass: the train activity judges each evaluation checkpoint as it is kept, and tells
the training child to stop once one passes (and nothing it maximises still improves).

Each kept checkpoint before the end has its episodes (its 10th-percentile, median and
90th-percentile returns) judged by the session's judge, through
the scorer the train pool's worker hands over (`use_scorer`: the judging stage's
`score_checkpoint`; the stages never import each other). The checkpoint passes when every one
of them passes (every criterion met, workflows/verdict.py); it stops the run only from
`min_steps` (and `min_share` of the budget) on, and the checkpoints before that still tell the
plateau rule where a maximised value stood. A criterion to maximise ("as fast
as possible") keeps training going past its target while it still improves: the run stops at a
passing checkpoint only once each such criterion's mean measured value gained less than
PLATEAU_GAIN over the checkpoint judged before it (a first checkpoint has nothing to compare
with, so it never stops a maximising run). Then the marker `STOP` appears in the training
child's output folder; the engine reads it after its next update, ends training there and
keeps the passing checkpoint's policy as the run's (the updates made while it was judged may
have drifted from it: a Humanoid walk that passed at 1M steps fell after 109 steps 20k steps
later), and the final evaluation judges that policy again. A judge that fails on a
checkpoint only logs, and so does a worker with no scorer: the run then trains its whole budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from statistics import fmean
from typing import Any

from activities.runner.protocol import ChildFailed
from activities.training.eval_checkpoints import PICKS, STOP, checkpoint_folder, write_marker
from workflows.contracts.judging import Judgment
from workflows.contracts.training import StopAtPass

# (rule, env_id, episode files, a folder to work in) -> each episode's judgment.
Scorer = Callable[[StopAtPass, str, list[Path], Path], Awaitable[list[Judgment]]]
_SCORER: list[Scorer] = []

# A maximised value that gained less than this share (of its previous value's magnitude, at
# least PLATEAU_FLOOR in its unit) between two judged checkpoints has levelled off.
PLATEAU_GAIN = 0.05
PLATEAU_FLOOR = 0.02


def use_scorer(scorer: Scorer) -> None:
    """The checkpoint scorer this process's train activities use (set by the train pool)."""
    _SCORER[:] = [scorer]


def still_improving(before: float | None, now: float) -> bool:
    """Whether a maximised value still improves: no earlier value, or a gain of at least
    PLATEAU_GAIN of the earlier one's magnitude (PLATEAU_FLOOR at least)."""
    if before is None:
        return True
    return now - before >= max(PLATEAU_GAIN * abs(before), PLATEAU_FLOOR)


class Stopper:
    """Judges a run's kept checkpoints against `rule` and writes the stop marker into `out`."""

    def __init__(self, rule: StopAtPass, env_id: str, out: Path, log: Any) -> None:
        self.rule, self.env_id, self.out, self.log = rule, env_id, out, log
        self.stopped_at: int | None = None
        self.scores: dict[int, float] = {}
        self.maximised = [c.name for c in rule.criteria if c.maximise]
        # The maximised criteria's mean measured value at the last judged checkpoint.
        self.last: dict[str, float] = {}

    async def checkpoint_kept(self, pct: int, timesteps: int) -> None:
        """Judge the checkpoint kept at `pct`% (`timesteps` steps in) and stop training when it
        passes, what it maximises has levelled off, and the run is past its minimum."""
        if self.stopped_at is not None or pct >= 100:
            return
        early = timesteps < self.rule.min_steps or pct < 100 * self.rule.min_share
        if not _SCORER:
            self.log.warning("checkpoint not judged: this worker has no checkpoint scorer")
            return
        folder = checkpoint_folder(self.out, pct)
        episodes = [folder / f"{name}.npz" for name, _ in PICKS]
        try:
            judged = await _SCORER[0](
                self.rule, self.env_id, episodes, self.out.parent / "judge" / folder.name
            )
        except (ChildFailed, ValueError, OSError) as exc:
            self.log.warning("checkpoint not judged", pct=pct, error=str(exc)[:300])
            return
        # Every kept episode must pass, the worst (p10) included: the final evaluation is one
        # more episode, and a checkpoint passing only on average would often not be confirmed.
        score = min(j.score for j in judged)
        passed = all(j.passed for j in judged)
        self.scores[pct] = round(score, 4)
        improving = self._improving(judged)
        values = {name: round(v, 4) for name, v in self.last.items()}
        if passed and not improving and not early:
            self.stopped_at = pct
            write_marker(self.out / STOP, {"pct": pct, "score": round(score, 4)})
            self.log.info(
                "checkpoint passed: stopping training", pct=pct, score=round(score, 4), **values
            )
        elif passed:
            why = {"before_minimum": timesteps} if early else {"improving": improving}
            self.log.info("checkpoint passed, training on", pct=pct, **why, **values)
        else:
            self.log.info("checkpoint judged", pct=pct, score=round(score, 4), **values)

    def _improving(self, judged: list[Judgment]) -> list[str]:
        """The maximised criteria that still improve at this checkpoint (and remember their
        values for the next)."""
        out = []
        for name in self.maximised:
            values = [c.value for j in judged for c in j.criteria if c.name == name and c.measured]
            if not values:
                out.append(name)  # not measured: nothing says it levelled off
                continue
            now = fmean(values)
            if still_improving(self.last.get(name), now):
                out.append(name)
            self.last[name] = now
        return out
