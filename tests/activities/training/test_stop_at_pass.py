"""Stop at pass: a run stops at the first checkpoint whose kept episodes all meet every
criterion; a criterion to maximise keeps it training while its value still improves.

The checkpoints' episodes are real trajectory files judged by the real built-in code judge
(`score_checkpoint`, the scorer the train pool hands over)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from activities.judging.checkpoints import score_checkpoint
from activities.training import stop_at_pass
from activities.training.eval_checkpoints import (
    PICKS,
    STOP,
    EvalSchedule,
    checkpoint_folder,
    checkpoint_fractions,
    pct_of,
)
from activities.training.stop_at_pass import Stopper, still_improving, use_scorer
from workflows.contracts.judging import Criterion
from workflows.contracts.training import StopAtPass

ENV = "HalfCheetah-v5"


def _criteria(maximise: bool) -> list[Criterion]:
    return [
        Criterion(
            name="forward_speed",
            description="runs forward",
            metric="mean_x_velocity",
            target=2.0,
            unit="m/s",
            maximise=maximise,
        ),
        Criterion(
            name="stays_upright",
            description="upright",
            metric="mean_uprightness",
            target=0.7,
        ),
    ]


def _episode(path: Path, speed: float, steps: int = 50) -> None:
    """An upright HalfCheetah episode running at `speed` m/s."""
    qpos = np.zeros((steps, 9))
    qpos[:, 0] = np.arange(steps) * speed * 0.05
    qvel = np.zeros((steps, 9))
    qvel[:, 0] = speed
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        action=np.zeros((steps, 6)),
        qpos=qpos,
        qvel=qvel,
        info_x_velocity=np.full(steps, speed),
        terminated=np.zeros(steps, dtype=bool),
        meta_dt=np.array(0.05),
        meta_max_steps=np.array(steps),
    )


def _checkpoint(out: Path, pct: int, speeds: tuple[float, float, float]) -> None:
    for (name, _), speed in zip(PICKS, speeds, strict=True):
        _episode(checkpoint_folder(out, pct) / f"{name}.npz", speed)


async def _run(
    tmp_path: Path,
    maximise: bool,
    checkpoints: dict[int, tuple[float, ...]],
    min_steps: int = 50_000,
) -> Stopper:
    """The checkpoints of a 1M-step run (pct% = pct * 10k steps) judged as they are kept."""
    use_scorer(score_checkpoint)
    out = tmp_path / "out"
    rule = StopAtPass(criteria=_criteria(maximise), pass_threshold=0.8, min_steps=min_steps)
    stopper = Stopper(rule, ENV, out, logging.getLogger("test"))
    for pct, speeds in checkpoints.items():
        _checkpoint(out, pct, speeds)  # type: ignore[arg-type]
        await stopper.checkpoint_kept(pct, pct * 10_000)
        if stopper.stopped_at is not None:
            break
    return stopper


async def test_a_target_stops_at_the_first_checkpoint_whose_episodes_all_pass(tmp_path: Path):
    # At 25% the worst episode runs 1.9 m/s: a score of 0.95 is progress, not a pass.
    stopper = await _run(
        tmp_path, False, {25: (1.9, 2.4, 2.6), 50: (2.1, 2.5, 2.7), 75: (2.2, 2.6, 2.8)}
    )
    assert stopper.scores[25] == pytest.approx(0.975, abs=0.01)
    assert stopper.stopped_at == 50
    assert (tmp_path / "out" / STOP).exists()


async def test_a_pass_before_the_minimum_in_steps_trains_on(tmp_path: Path):
    # A 1M-step run: its 5% checkpoint (50k steps) may stop it, its 2% one (20k) may not,
    # whatever share of the budget that is.
    early = await _run(tmp_path / "a", False, {2: (2.1, 2.5, 2.7), 5: (2.2, 2.6, 2.8)})
    assert early.scores[2] == 1.0 and early.stopped_at == 5
    late = await _run(tmp_path / "b", False, {5: (2.2, 2.6, 2.8)}, min_steps=100_000)
    assert late.stopped_at is None and not (tmp_path / "b" / "out" / STOP).exists()


async def test_a_checkpoint_before_the_minimum_still_counts_for_the_plateau(tmp_path: Path):
    # 2.5 m/s at 20k steps (too early to stop), 2.55 at 50k: levelled off, so it stops there.
    stopper = await _run(tmp_path, True, {2: (2.4, 2.5, 2.6), 5: (2.45, 2.55, 2.65)})
    assert stopper.stopped_at == 5


async def test_as_fast_as_possible_trains_on_while_the_speed_still_improves(tmp_path: Path):
    # Every checkpoint passes; the speed gains 20 % then 3 %: it stops at the plateau (75%).
    stopper = await _run(
        tmp_path, True, {25: (2.4, 2.5, 2.6), 50: (2.9, 3.0, 3.1), 75: (3.0, 3.1, 3.2)}
    )
    assert stopper.stopped_at == 75
    assert stopper.last["forward_speed"] == pytest.approx(3.1)


async def test_as_fast_as_possible_never_stops_while_it_improves(tmp_path: Path):
    stopper = await _run(
        tmp_path, True, {25: (2.4, 2.5, 2.6), 50: (2.9, 3.0, 3.1), 75: (3.4, 3.5, 3.6)}
    )
    assert stopper.stopped_at is None
    assert not (tmp_path / "out" / STOP).exists()


@pytest.mark.parametrize(
    ("before", "now", "improving"),
    [
        (None, 1.0, True),
        (2.0, 2.2, True),
        (2.0, 2.09, False),
        (0.1, 0.115, False),
        (3.0, 2.5, False),
    ],
)
def test_the_plateau_rule(before: float | None, now: float, improving: bool):
    assert still_improving(before, now) is improving
    assert stop_at_pass.PLATEAU_GAIN == 0.05


@pytest.mark.parametrize(
    ("total", "early", "kept_at"),
    [
        # A body's budget of 1M: an easy case may stop at 50k, 100k, 200k or 400k steps.
        (1_000_000, 50_000, [50_000, 100_000, 200_000, 250_000, 400_000, 500_000, 750_000]),
        # The humanoids' 2M: 400k and 800k between the quarters.
        (2_000_000, 50_000, [50_000, 100_000, 200_000, 400_000, 500_000, 800_000, 1_000_000]),
        # The demo's 150k: 50k sits between its quarters.
        (150_000, 50_000, [37_500, 50_000, 75_000, 112_500, 150_000]),
        # 10M: 100k would share the 1% folder with 50k, so it is left out.
        (10_000_000, 50_000, [50_000, 200_000, 400_000, 800_000, 1_600_000, 2_500_000, 3_200_000]),
        (1_000_000, 0, [250_000, 500_000, 750_000, 1_000_000]),
    ],
)
def test_checkpoints_come_from_the_minimum_in_steps_whatever_the_budget(total, early, kept_at):
    fractions = checkpoint_fractions(total, early)
    assert [round(f * total) for f in fractions][: len(kept_at)] == kept_at
    pcts = [pct_of(f) for f in fractions]
    assert len(set(pcts)) == len(pcts) and min(pcts) >= 1  # one folder each
    # A run resumed past its early points keeps only what is still due (and always the end).
    due = [f for f in fractions if f * total > 300_000 or f == 1.0]
    assert EvalSchedule(total, 300_000, early).todo == due
