"""LLM-written judge code: the contract check, and running it in the child process only."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.judging.activities import judge_rollout
from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.sandbox.judge_code import JudgeLoadError, check_judgment
from activities.training.job import VALIDATE_JUDGE
from tests.activities.training.rewards import RUN_FORWARD
from tests.builders import cheetah_trajectory
from workflows.contracts.judging import Criterion, JudgeRequest

GOOD_JUDGE = """
import numpy as np

def judge_fn(trajectory):
    vx = float(np.mean(trajectory["info_x_velocity"]))
    speed = min(max(vx / 2.0, 0.0), 1.0)
    alive = 0.0 if trajectory["terminated"][-1] else 1.0
    return {
        "score": (speed + alive) / 2,
        "criteria": {"speed": speed, "stays_up": alive},
        "measured": {"speed": vx, "stays_up": alive},
        "diagnosis": f"mean forward velocity {vx:.2f} m/s against 2.00",
        "failure_tags": [] if speed >= 1 else ["too_slow"],
    }
"""

BROKEN_JUDGE = """
def judge_fn(trajectory):
    return {"score": trajectory["no_such_array"].mean()}
"""

CRITERIA = ["speed", "stays_up"]


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (0.5, "must return a dict"),
        ({"score": 0.5, "criteria": {}, "measured": {}}, "lacks ['diagnosis']"),
        ({"criteria": {}, "diagnosis": ""}, "lacks ['measured']"),
        ({"score": 1.5, "criteria": {}, "measured": {}, "diagnosis": ""}, "must be in [0, 1]"),
        (
            {"criteria": {"speed": 1.0}, "measured": {"speed": 2.0}, "diagnosis": "x"},
            "'criteria' lacks ['stays_up']",
        ),
        (
            {
                "criteria": {"speed": 1.0, "stays_up": 1.0},
                "measured": {"speed": 2.0},
                "diagnosis": "x",
            },
            "'measured' lacks ['stays_up']",
        ),
        (
            {"score": float("nan"), "criteria": {}, "measured": {}, "diagnosis": ""},
            "must be in [0, 1]",
        ),
        (
            {
                "criteria": {"speed": "fast", "stays_up": 1},
                "measured": {"speed": 2.0, "stays_up": 1.0},
                "diagnosis": "",
            },
            "criterion 'speed' must be a number",
        ),
    ],
)
def test_judgments_outside_the_contract_are_named(out, message):
    with pytest.raises(JudgeLoadError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_judgment(out, CRITERIA if "stays_up" in message or "'speed'" in message else [])


SPECS = [
    Criterion(name="speed", description="fast", metric="mean_x_velocity", target=2.0, unit="m/s"),
    Criterion(name="stays_up", description="does not fall", target=1.0),
]


async def test_validate_judge_runs_it_on_the_contrasting_episodes_in_the_child(tmp_path: Path):
    req = ChildRequest(
        env_id="HalfCheetah-v5",
        reward_source=RUN_FORWARD,
        judge_source=GOOD_JUDGE,
        criteria=CRITERIA,
        judge_criteria=SPECS,
        steps=50,
    )
    result = await run_child(VALIDATE_JUDGE, req, tmp_path / "ok", timeout_s=120)
    # Random and zero actions for the whole (capped) episode, a fall, the body driven backwards
    # (the opposite of the forward speed asked for) and forwards; all judged by the same code.
    episodes = {e["name"]: e for e in result["episodes"]}
    assert list(episodes) == ["random", "zero", "short", "opposite_x", "toward"]
    assert [e["steps"] for e in episodes.values()] == [50, 50, 12, 50, 50]
    assert result["steps"] == 212
    for e in episodes.values():
        assert set(e["judgment"]["criteria"]) == set(CRITERIA)
        assert e["library"]["speed"] == pytest.approx(e["judgment"]["measured"]["speed"])
    assert episodes["short"]["judgment"]["measured"]["stays_up"] == 0.0
    assert episodes["opposite_x"]["library"]["speed"] == pytest.approx(-2.5, abs=0.1)

    broken = req.model_copy(update={"judge_source": BROKEN_JUDGE})
    with pytest.raises(ChildFailed) as info:
        await run_child(VALIDATE_JUDGE, broken, tmp_path / "bad", timeout_s=120)
    assert info.value.reward_fault
    assert info.value.message.startswith("judge_fn.py line 3: KeyError")


async def test_judge_rollout_runs_judge_code_from_s3(s3):
    store = ArtifactStore()
    judge_key = store.put_text("sessions/jc/judge_fn.py", GOOD_JUDGE)
    traj_key = "sessions/jc/iter_1/c0_default_seed_0/trajectories/eval.npz"
    store.put_bytes(traj_key, cheetah_trajectory(vx=1.0))
    criteria = [
        Criterion(name="speed", description="speed", measure="see judge", target=2.0),
        Criterion(name="stays_up", description="up", measure="see judge", target=1.0),
    ]
    req = JudgeRequest(
        env_id="HalfCheetah-v5",
        trajectory_key=traj_key,
        criteria=criteria,
        pass_threshold=0.8,
        judge_key=judge_key,
    )
    judgment = await ActivityEnvironment().run(judge_rollout, req)
    # The trusted side computes the score and the verdict from the measured values.
    assert judgment.score == pytest.approx(0.75) and not judgment.passed
    assert {c.name: c.score for c in judgment.criteria} == {"speed": 0.5, "stays_up": 1.0}
    assert {c.name: c.met for c in judgment.criteria} == {"speed": False, "stays_up": True}
    assert judgment.failure_tags == ["too_slow"]
    assert judgment.diagnosis.startswith("Not passed: speed 1.00, target at least 2.00.")
    assert store.exists("sessions/jc/iter_1/c0_default_seed_0/judgment.json")


# Speed weighs three times staying up: an episode of random actions scores about 0.25.
MEASURING_JUDGE = GOOD_JUDGE.replace(
    '"score": (speed + alive) / 2', '"score": (3 * speed + alive) / 4'
)
# Scores its criteria but reports no physical value: it cannot be judged.
SCORING_JUDGE = GOOD_JUDGE.replace('        "measured": {"speed": vx, "stays_up": alive},\n', "")


async def test_the_judgment_shows_the_measured_value_against_the_real_target(s3):
    store = ArtifactStore()
    traj_key = "sessions/jm/iter_1/c0_default_seed_0/trajectories/eval.npz"
    store.put_bytes(traj_key, cheetah_trajectory(vx=0.62))
    criteria = [
        Criterion(name="speed", description="fast", target=1.5, unit="m/s"),
        Criterion(name="stays_up", description="up", target=1.0),
    ]
    req = JudgeRequest(
        env_id="HalfCheetah-v5",
        trajectory_key=traj_key,
        criteria=criteria,
        pass_threshold=0.8,
        judge_key=store.put_text("sessions/jm/measuring/judge_fn.py", MEASURING_JUDGE),
    )
    judgment = await ActivityEnvironment().run(judge_rollout, req)
    # The reviser, `status` and the dashboard read the speed in m/s against 1.5 m/s, not its
    # 0-1 score against "target 1".
    assert [c.line() for c in judgment.criteria] == [
        "- speed: measured 0.62 m/s against at least 1.5 m/s: not met (score 0.41)",
        "- stays_up: measured 1 against at least 1: met",
    ]
    # A judge that reports no measured value fails closed: the code goes back to be fixed.
    unmeasured = req.model_copy(
        update={"judge_key": store.put_text("sessions/jm/scoring/judge_fn.py", SCORING_JUDGE)}
    )
    with pytest.raises(Exception, match=r"'measured'"):
        await ActivityEnvironment().run(judge_rollout, unmeasured)


# Passes any episode that does not end early: it reports the target speed for it.
UPRIGHT_IS_FAST = GOOD_JUDGE.replace(
    'vx = float(np.mean(trajectory["info_x_velocity"]))',
    'vx = 0.0 if trajectory["terminated"][-1] else 2.0',
)


@pytest.mark.parametrize(
    ("source", "specs", "problem"),
    [
        (GOOD_JUDGE, SPECS, None),
        (SCORING_JUDGE, SPECS, "judge_fn's result lacks ['measured']"),
        (
            UPRIGHT_IS_FAST,
            SPECS,
            "On an episode of random actions for 50 steps: speed: the judge measured 2 m/s, "
            "the behaviour library (mean_x_velocity)",
        ),
        # A request from before criteria came in full (names only): the judge's own score.
        (
            MEASURING_JUDGE.replace('"score": (3 * speed + alive) / 4', '"score": alive'),
            [],
            "judge_fn scored an episode of random actions for 50 steps 1.00",
        ),
        (MEASURING_JUDGE, [], None),
    ],
)
async def test_validation_sends_back_a_judge_that_measures_nothing_or_passes_contrasts(
    s3, source: str, specs: list[Criterion], problem: str | None
):
    from activities.training.validate_activities import validate_judge
    from workflows.contracts.training import ValidateJudgeRequest

    store = ArtifactStore()
    req = ValidateJudgeRequest(
        env_id="HalfCheetah-v5",
        judge_key=store.put_text("sessions/jv/judge_fn.py", source),
        reward_key=store.put_text("sessions/jv/reward_fn.py", RUN_FORWARD),
        criteria=CRITERIA,
        specs=specs,
        steps=50,
    )
    result = await ActivityEnvironment().run(validate_judge, req)
    if problem is None:
        assert result.ok, result.error
    else:
        assert not result.ok and problem in (result.error or ""), result.error


def test_a_request_with_names_only_still_decodes():
    from workflows.contracts.training import ValidateJudgeRequest

    old = {"env_id": "Hopper-v5", "judge_key": "j", "reward_key": "r", "criteria": ["speed"]}
    req = ValidateJudgeRequest.model_validate({**old, "steps": 100, "seed": 0})
    assert req.criteria == ["speed"] and req.specs == [] and req.steps == 100
