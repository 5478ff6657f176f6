"""Judge code validated like a measurement: the episodes that must not pass (contrasts.py), the
decision on the trusted side (judge_validation.py), and every class of lenient judge sent back
by the real child with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from activities.behaviours.measured import library_values
from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.training.contrasts import drives, episodes
from activities.training.job import VALIDATE_JUDGE
from activities.training.judge_validation import judge_problem
from activities.training.reward_runtime import LocalRewards, load_reward
from tests.builders import FORWARD_REWARD
from tests.fakes.agents import CRITERIA, JUDGE
from tests.fakes.judges import ENV, GOOD, LENIENT, LONG_FAKE, forward_criteria
from workflows.contracts.judging import Criterion

SPEED = Criterion(name="speed", description="", metric="mean_x_velocity", target=2.0, unit="m/s")
STILL = Criterion(
    name="still", description="", metric="mean_horizontal_speed", target=0.1, direction="at_most"
)


def _answer(measured: dict[str, float], scores: dict[str, float] | None = None) -> dict[str, Any]:
    return {
        "score": None,
        "criteria": scores or {k: 1.0 for k in measured},
        "measured": measured,
        "diagnosis": "",
        "failure_tags": [],
    }


def _episode(name: str, contrast: str, answer: dict, library: dict | None = None) -> dict:
    what = f"an episode of {name} for 1000 steps"
    return {"name": name, "what": what, "contrast": contrast, "judgment": answer,
            "library": library or {}}  # fmt: skip


# --- the decision ---------------------------------------------------------------------------


def test_a_judge_whose_verdict_passes_a_contrast_is_sent_back_naming_the_episode():
    steady = Criterion(name="steady", description="", target=0.3, direction="at_most")
    episodes = [
        _episode("random actions", "always", _answer({"steady": 0.7}, {"steady": 0.4})),
        _episode("zero actions", "unless_met", _answer({"steady": 0.0})),
    ]
    # Zero actions meet "steady", and no criterion names a metric to say otherwise.
    assert judge_problem(episodes, [steady]) is None
    episodes[0]["judgment"] = _answer({"steady": 0.1})
    problem = judge_problem(episodes, [steady])
    assert problem is not None
    assert problem.startswith(
        "It passed an episode of random actions for 1000 steps, which does "
        "not do the behaviour: steady 0.1 (target at most 0.30)."
    )


def test_zero_actions_are_a_contrast_only_where_the_library_says_they_miss_a_criterion():
    # The library measured the speed short of its target: zero actions must not pass, and a
    # judge value within the agreement of the library's but over the line passes them.
    answer = _answer({"speed": 2.0})
    missed = _episode("zero actions", "unless_met", answer, {"speed": 1.95})
    assert "It passed an episode of zero actions" in (judge_problem([missed], [SPEED]) or "")
    # Met by every criterion the library measures ("stand still"): not a contrast.
    met = _episode("zero actions", "unless_met", _answer({"still": 0.0}), {"still": 0.0})
    assert judge_problem([met], [STILL]) is None
    # The episode driven the way the criteria ask is never a contrast.
    toward = _episode("the body driven forwards", "never", _answer({"speed": 2.5}), {"speed": 2.5})
    assert judge_problem([toward], [SPEED]) is None


def test_values_the_library_contradicts_are_sent_back_with_both_numbers():
    answer = _answer({"speed": 2.5}, {"speed": 1.0})
    episode = _episode("the body driven backwards", "always", answer, {"speed": -2.5})
    episode["name"] = "opposite_x"
    problem = judge_problem([episode], [SPEED]) or ""
    # The library's value decides the verdict (not passed), and the judge goes back anyway.
    assert "It passed" not in problem
    assert (
        "On an episode of the body driven backwards for 1000 steps: speed: the judge measured "
        "2.5 m/s, the behaviour library (mean_x_velocity) -2.5 m/s." in problem
    )


def test_a_request_from_before_with_names_only_checks_the_judges_own_score():
    low = _episode("random actions", "always", {**_answer({"speed": 0.1}), "score": 0.1})
    assert judge_problem([low], [], ["speed"]) is None
    high = _episode("random actions", "always", {**_answer({"speed": 3.0}), "score": 0.9})
    assert "scored an episode of random actions for 1000 steps 0.90 (speed 1.00)" in (
        judge_problem([high], [], ["speed"]) or ""
    )


# --- the episodes ---------------------------------------------------------------------------


def test_directions_the_body_can_show_the_opposite_of():
    assert drives([SPEED], ENV, 1000, 0.05) == {"x": pytest.approx(2.5)}
    back = SPEED.model_copy(update={"metric": "mean_backward_velocity"})
    assert drives([back], ENV, 1000, 0.05) == {"x": pytest.approx(-2.5)}
    spin = Criterion(name="spin", description="", metric="mean_yaw_rate", target=1.0)
    assert drives([spin], ENV, 1000, 0.05) == {}  # a planar body cannot turn
    assert drives([spin], "Ant-v5", 1000, 0.05) == {"yaw": pytest.approx(1.25)}
    distance = Criterion(name="far", description="", metric="forward_distance", target=10.0)
    assert drives([distance], ENV, 1000, 0.05) == {"x": pytest.approx(0.25)}  # 12.5 m in 50 s
    near = SPEED.model_copy(update={"direction": "near", "tolerance": 0.2})
    assert drives([near], ENV, 1000, 0.05) == {"x": pytest.approx(2.0)}
    assert drives([STILL, SPEED.model_copy(update={"target": 0.0})], ENV, 1000, 0.05) == {}


def test_the_episodes_are_real_physics_and_the_contrasts_carry_the_best_paid_reward():
    reward = LocalRewards(load_reward(FORWARD_REWARD, "reward_fn.py", guarded=False))
    played = {e.name: e for e in episodes(ENV, reward, [SPEED], seed=0)}
    assert list(played) == ["random", "zero", "short", "opposite_x", "toward"]
    assert [played[n].steps for n in played] == [1000, 1000, 40, 1000, 1000]
    assert (
        played["short"].arrays["terminated"][-1] and not played["random"].arrays["terminated"][-1]
    )
    assert played["opposite_x"].what == (
        "an episode of the body driven backwards at 2.50 m/s for 1000 steps"
    )
    speeds = {n: library_values(e.arrays, ENV, [SPEED])["speed"] for n, e in played.items()}
    assert speeds["opposite_x"] == pytest.approx(-2.5, abs=0.05)
    assert speeds["toward"] == pytest.approx(2.5, abs=0.05)
    assert abs(speeds["zero"]) < 0.05 and abs(speeds["random"]) < 0.5
    # The body's own record says where it went: the env's x velocity and the root's qvel agree.
    back = played["opposite_x"].arrays
    assert np.mean(back["qvel"][:, 0]) == pytest.approx(-2.5, abs=0.1)
    # Every contrast is paid what the driven-forwards episode was paid (its own reward would
    # say it went nowhere): a judge that reads the reward passes them.
    paid = played["toward"].arrays
    for name in ("random", "zero", "opposite_x"):
        arrays = played[name].arrays
        assert np.array_equal(arrays["reward"], paid["reward"])
        assert np.array_equal(arrays["term_forward"], paid["term_forward"])
    assert np.array_equal(played["short"].arrays["reward"], paid["reward"][:40])


# --- the real child: a judge that measures, and every lenient class -------------------------


async def _validate(source: str, criteria: list[Criterion], tmp: Path) -> str | None:
    names = [c.name for c in criteria]
    req = ChildRequest(
        env_id=ENV,
        reward_source=FORWARD_REWARD,
        judge_source=source,
        criteria=names,
        judge_criteria=criteria,
        steps=0,
    )
    result = await run_child(VALIDATE_JUDGE, req, tmp, timeout_s=120)
    return judge_problem(result["episodes"], criteria, names)


async def test_a_judge_that_measures_the_behaviour_is_accepted(tmp_path: Path):
    assert await _validate(GOOD, forward_criteria(), tmp_path / "good") is None
    fakes = [Criterion.model_validate(c) for c in CRITERIA]
    assert await _validate(JUDGE, fakes, tmp_path / "fake") is None


@pytest.mark.parametrize("kind", sorted(LENIENT))
async def test_every_class_of_lenient_judge_is_sent_back_with_the_reason(kind: str, tmp_path: Path):
    source, reason = LENIENT[kind]
    problem = await _validate(source, forward_criteria(), tmp_path)
    assert problem is not None and reason in problem, problem


async def test_a_judge_that_passes_long_episodes_is_caught_by_its_verdict(tmp_path: Path):
    source, reason = LONG_FAKE
    fakes = [Criterion.model_validate(c) for c in CRITERIA]
    problem = await _validate(source, fakes, tmp_path)
    assert problem is not None and reason in problem, problem


async def test_the_episodes_scalars_reach_the_judge_as_scalars(tmp_path: Path):
    # meta_dt and meta_max_steps are 0-d arrays: float() and int() take them (numpy 2 refuses
    # a (1,) array), as the judge contract says.
    reads = GOOD.replace(
        "    #SCORE\n",
        "    assert t['meta_dt'].shape == () and int(t['meta_max_steps']) == 1000\n"
        "    assert float(t['meta_dt']) == 0.05\n",
    )
    assert await _validate(reads, forward_criteria(), tmp_path) is None
