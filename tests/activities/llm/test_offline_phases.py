"""Sequences, counted repetitions and flips are phased rewards (SHAPING phases), judged per
phase; postures an env's termination forbids are shaped (healthy_z_range), said in the summary;
the reviser keeps a phased reward's structure."""

from __future__ import annotations

import ast
import math

import pytest
from temporalio.exceptions import ApplicationError

from activities.envs.catalog import facts
from activities.llm.offline import OfflineAuthor, revise
from activities.llm.offline.rendering.composed import composition_for
from activities.training.batched.shaping import parse
from workflows.contracts.judging import CriterionScore, Judgment
from workflows.contracts.llm import ReviseRequest
from workflows.contracts.training import RewardArtifact, TrainResult


def parse_shaping(shaping: dict, env_id: str) -> None:
    """The trainer's own check of a SHAPING (raises ShapingError when it cannot apply)."""
    f = facts(env_id)
    parse(shaping, env_id, f.obs_dim, f.max_episode_steps)


def _shaping(code: str) -> dict:
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "SHAPING":
            return ast.literal_eval(node.value)
    return {}


def test_a_sequence_is_one_time_phase_per_step_judged_in_its_phase():
    a = OfflineAuthor().author("sprint, then slow to a walk", "HalfCheetah-v5")
    phases = _shaping(a.reward.code)["phases"]
    # HalfCheetah's episode is 50 s: half each.
    assert phases == [{"name": "sprint", "until": "time", "above": 25.0}, {"name": "walk"}]
    names = [c.name for c in a.criteria]
    assert "moves_forward_in_sprint" in names and "moves_forward_at_speed_in_walk" in names
    walk = next(c for c in a.criteria if c.name == "moves_forward_at_speed_in_walk")
    assert walk.metric is None and walk.description.startswith("walk (phase 2): ")
    assert "(phase == 0)" in a.reward.code and "(phase == 1)" in a.reward.code
    assert a.judge is not None and "info_phase" in a.judge
    assert a.reward.summary.count("Phases: sprint -> walk.") == 1


def test_stated_durations_set_the_phase_ends():
    a = OfflineAuthor().author("run forward for 10 seconds, then run backward", "HalfCheetah-v5")
    assert _shaping(a.reward.code)["phases"][0] == {"name": "run_1", "until": "time", "above": 10.0}
    with pytest.raises(Exception, match="longer than the 8 s an episode of Hopper-v5 lasts"):
        OfflineAuthor().author("hop forward for 10 seconds, then stop", "Hopper-v5")


def test_counted_jumps_rise_and_land_on_height_and_are_paid_from_floors():
    a = OfflineAuthor().author("jump twice", "Hopper-v5")
    phases = _shaping(a.reward.code)["phases"]
    assert [p["name"] for p in phases] == ["jump_1", "land_1", "jump_2", "land_2"]
    assert phases[0]["until"] == "height" and "above" in phases[0]
    assert phases[1]["until"] == "height" and "below" in phases[1]
    assert "until" not in phases[-1]
    assert "progress" in a.reward.terms  # a floor per phase reached
    jumps = next(c for c in a.criteria if c.name == "jumps")
    assert (jumps.target, jumps.direction, jumps.metric) == (2.0, "at_least", None)
    assert "count_rises" in (a.judge or "")


def test_more_counted_jumps_than_phases_allow_are_refused():
    with pytest.raises(Exception, match="at most 8"):
        OfflineAuthor().author("jump 5 times", "Hopper-v5")


@pytest.mark.parametrize(
    ("prompt", "edge"), [("do a backflip", "above"), ("do a front flip", "below")]
)
def test_a_flip_is_crouch_launch_rotate_land_on_the_accumulated_turn(prompt: str, edge: str):
    a = OfflineAuthor().author(prompt, "HalfCheetah-v5")
    phases = _shaping(a.reward.code)["phases"]
    assert [p["name"] for p in phases] == ["crouch", "launch", "rotate", "land"]
    rotate = phases[2]
    assert rotate["until"] == "turn" and abs(rotate[edge]) == pytest.approx(
        0.9 * 2 * math.pi, abs=1e-3
    )
    assert "info['turn']" in a.reward.code
    assert "P.total_rotation(ENV, t, 'pitch')" in (a.judge or "")


def test_a_flip_on_a_body_whose_band_ends_it_is_shaped_and_said():
    a = OfflineAuthor().author("do a backflip", "Ant-v5")
    shaping = _shaping(a.reward.code)
    assert shaping["healthy_z_range"] == [0.2, 3.0] and "phases" in shaping
    assert "SHAPING healthy_z_range [0.2, 3.0]" in a.reward.summary
    parse_shaping(shaping, "Ant-v5")  # the trainer accepts it


@pytest.mark.parametrize(
    ("env_id", "prompt", "band"),
    [
        ("Ant-v5", "lie down", [0.1, 1.0]),
        ("Humanoid-v5", "lie down and stay still", [0.0, 2.0]),
        ("Humanoid-v5", "sit down", [0.3, 2.0]),
        ("Walker2d-v5", "jump 1 m high", [0.8, 3.25]),
    ],
)
def test_postures_the_env_ends_are_shaped_and_judged_unshaped(env_id, prompt, band):
    a = OfflineAuthor().author(prompt, env_id)
    shaping = _shaping(a.reward.code)
    assert shaping["healthy_z_range"] == band
    parse_shaping(shaping, env_id)
    assert "SHAPING healthy_z_range" in a.reward.summary
    # The judge measures the posture itself, with the built-in metrics.
    assert a.judge is None and all(c.metric for c in a.criteria)


def test_repeated_steps_share_their_terms_and_criteria():
    a = OfflineAuthor().author("squat 3 times", "Humanoid-v5")
    assert [p["name"] for p in _shaping(a.reward.code)["phases"]] == ["squat", "stand"] * 3
    assert "(phase in (0, 2, 4))" in a.reward.code and "(phase in (1, 3, 5))" in a.reward.code
    comp = composition_for("squat 3 times", "Humanoid-v5")
    assert comp.windows["squats_at_height_in_squat"] == (0, 2, 4)


def _revise(prompt: str, env_id: str, scores: dict[str, float]) -> ReviseRequest:
    a = OfflineAuthor().author(prompt, env_id)
    criteria = [
        CriterionScore(
            name=c.name, metric=c.metric or c.name, value=0.0, target=c.target,
            direction=c.direction, score=scores.get(c.name, 1.0),
        )
        for c in a.criteria
    ]  # fmt: skip
    r = a.reward
    return ReviseRequest(
        session_id="s",
        prompt=prompt,
        env_id=env_id,
        llm_model="offline",
        iteration=2,
        criteria=a.criteria,
        reward=RewardArtifact(
            key="k", latex=r.latex, terms=r.terms, summary=r.summary, template=r.template,
            params=r.params,
        ),
        judgment=Judgment(score=0.4, passed=False, diagnosis="", criteria=criteria),
        train=TrainResult(
            run_prefix="p/", model_key="m", vecnormalize_key="v", timesteps_done=1, term_means={}
        ),
        timesteps=100_000,
        timesteps_cap=400_000,
    )  # fmt: skip


def test_the_reviser_raises_a_failing_phase_and_keeps_the_phases():
    prompt, env_id = "sprint, then slow to a walk", "HalfCheetah-v5"
    revised = revise(_revise(prompt, env_id, {"moves_forward_in_sprint": 0.2}))
    assert "moves_forward_in_sprint" in revised.changes
    assert revised.reward.params["velocity_sprint_weight"] == pytest.approx(1.5)
    assert _shaping(revised.reward.code)["phases"][0]["name"] == "sprint"


def test_every_shaping_the_bank_authors_is_one_the_trainer_accepts():
    from tests.activities.llm.paraphrases import BANK

    shaped = 0
    for env_id, prompt, want in BANK:
        if "refuse" in want:
            continue
        try:
            shaping = _shaping(OfflineAuthor().author(prompt, env_id).reward.code)
        except ApplicationError:
            continue  # the bank's known misses
        if shaping:
            parse_shaping(shaping, env_id)
            shaped += 1
    assert shaped >= 30


def test_a_revised_template_reward_still_says_what_it_does_not_measure():
    req = _revise("run forward gracefully", "HalfCheetah-v5", {})
    assert req.reward.template == "forward"
    assert revise(req).reward.summary.endswith("Not measured: gracefully.")
