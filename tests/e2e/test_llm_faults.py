"""Sessions that a normal model answer used to end in failure, through the real workflow and
workers with the real Anthropic SDK pointed at a local server speaking the Messages API: a
shaped reward in a one-candidate session, judge code that fails on a later episode, and a
phased backflip reward with a judge that measures the accumulated turn, written as the
contracts show them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from activities.artifacts import ArtifactStore
from activities.llm.agents.common import PROMPTS
from activities.training.policy_meta import read_meta
from tests.builders import FORWARD_REWARD
from tests.e2e.test_llm_session import llm_session, tools
from tests.fakes.agents import CRITERIA, JUDGE, agent_asked
from tests.fakes.llm_server import Reply

SHAPED_REWARD = FORWARD_REWARD + '\nSHAPING = {"max_episode_steps": 200, "init_noise": 0.5}\n'

# Validated on whole episodes of random and zero actions (1000 steps) and a fall (terminated);
# the evaluation episodes here are 40 steps that do not end early, where the fixed index is
# out of range (a branch validation never reached).
LATE_FAILING_JUDGE = JUDGE.replace(
    "    up = 0.0",
    "    if len(trajectory['action']) < 100 and not trajectory['terminated'][-1]:\n"
    "        late = float(trajectory['qvel'][60][0])\n"
    "    up = 0.0",
)


class Answers:
    """What the model answers each agent; the fixer repairs whichever code it is shown."""

    def __init__(self, reward: str, judge: str, criteria: list[dict] = CRITERIA) -> None:
        self.reward, self.judge, self.criteria = reward, judge, criteria
        self.agents: list[str] = []

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        agent = agent_asked(body)
        self.agents.append(agent)
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": self.criteria})], 900, 200)
        if agent == "reward_author":
            return tools([("submit_reward", {"code": self.reward, "summary": "v_x"})], 900, 300)
        if agent == "judge_author":
            return tools([("submit_judge", {"code": self.judge, "summary": "up"})], 900, 300)
        if agent == "reviewer":
            return tools([("submit_review", {"verdict": "LGTM", "notes": "fine"})], 900, 50)
        if agent == "fixer":
            tool = body["tools"][0]["name"]
            if tool == "submit_judge":
                return tools([("submit_judge", {"code": JUDGE, "summary": "fixed"})], 900, 300)
            args = {"code": FORWARD_REWARD, "latex": "r = v_x", "terms": ["forward", "ctrl"]}
            return tools([("submit_reward", args)], 900, 300)
        raise AssertionError(f"unexpected agent {agent}")


async def _session(temporal_env, queue_prefix, monkeypatch, answers: Answers, **overrides):
    inputs = {
        "max_iterations": 1,
        "total_timesteps": 4096,
        "vlm_judge": False,
        "eval_max_steps": 40,
        "pass_threshold": 0.5,
        **overrides,
    }
    async with llm_session(temporal_env, queue_prefix, monkeypatch, answers, **inputs) as (
        server,
        handle,
    ):
        result = await asyncio.wait_for(handle.result(), timeout=600)
    return server, result


@pytest.mark.slow  # two real sessions
async def test_a_shaped_reward_trains_in_a_one_candidate_session(
    temporal_env, s3, queue_prefix, monkeypatch
):
    answers = Answers(SHAPED_REWARD, JUDGE)
    _, result = await _session(temporal_env, queue_prefix, monkeypatch, answers)
    assert result.status in ("passed", "not_passed")
    assert "fixer" not in answers.agents  # the shaping was honoured, not refused
    (record,) = result.iterations
    summary = json.loads(ArtifactStore().get_text(record.best_run.run_prefix + "summary.json"))
    assert summary["episode"]["max_episode_steps"] == 200  # trained under the shaping


@pytest.mark.slow  # a real session
async def test_judge_code_failing_on_a_later_episode_is_fixed_and_the_session_ends_judged(
    temporal_env, s3, queue_prefix, monkeypatch
):
    answers = Answers(FORWARD_REWARD, LATE_FAILING_JUDGE)
    server, result = await _session(temporal_env, queue_prefix, monkeypatch, answers)
    assert result.status in ("passed", "not_passed")
    assert answers.agents.count("fixer") == 1
    fixer = next(r.prompt() for r in server.requests if "code fixer" in r.prompt().system)
    assert "IndexError" in fixer.user and "passed validation" in fixer.user
    (record,) = result.iterations
    assert record.criteria and all(c.measured for c in record.criteria)


def _example(contract: str) -> str:
    """The complete module a contract shows its author (its first Python block)."""
    text = (PROMPTS / f"{contract}.md").read_text()
    return text.split("```python\n", 1)[1].split("```", 1)[0]


FLIP_CRITERIA = [
    {
        "name": "airborne",
        "description": "The torso rises for the launch.",
        "measure": "highest torso height over the episode",
        "target": 0.9,
        "direction": "at_least",
        "unit": "m",
    },
    {
        "name": "backflip",
        "description": "The torso turns nose-up through a full turn.",
        "measure": "total nose-up rotation of the torso over the episode",
        "target": 6.28,
        "direction": "at_least",
        "unit": "rad",
    },
    {
        "name": "lands_upright",
        "description": "It ends on its feet after the turn.",
        "measure": "final uprightness, counted after the turn",
        "target": 0.9,
        "direction": "at_least",
    },
]


@pytest.mark.slow  # a real session
async def test_a_phased_backflip_reward_trains_and_the_judge_measures_the_turn(
    temporal_env, s3, queue_prefix, monkeypatch, tmp_path
):
    answers = Answers(_example("reward_contract"), _example("judge_contract"), FLIP_CRITERIA)
    _, result = await _session(temporal_env, queue_prefix, monkeypatch, answers, eval_max_steps=200)
    # A few thousand steps learn no backflip: the session ends judged, not failed.
    assert result.status in ("passed", "not_passed")
    assert "fixer" not in answers.agents  # the contract's examples run as written
    (record,) = result.iterations
    turn = next(c for c in record.criteria if c.name == "backflip")
    assert turn.measured and turn.unit == "rad" and turn.target == pytest.approx(6.28)
    summary = json.loads(ArtifactStore().get_text(record.best_run.run_prefix + "summary.json"))
    assert set(summary["term_means"]) == {"crouch", "launch", "rotate", "land", "ctrl"}
    # The phase the trusted side kept was the policy's input too: the saved model takes the
    # env's 17 observations and the phase.
    model = tmp_path / "model.zip"
    model.write_bytes(ArtifactStore().get_bytes(record.best_run.run_prefix + "model.zip"))
    assert read_meta(model)["observation_space"].shape == (18,)
