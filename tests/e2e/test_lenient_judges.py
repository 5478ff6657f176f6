"""Judges that would pass what they should fail, through real sessions: the real workflow and
workers, the real Anthropic SDK pointed at a local server replaying a model's answers. Each
lenient judge is sent back at validation, on the episodes that must not pass, with the reason;
the fixer sees it and answers with a judge that measures, and the session goes on judged by it.

One session per class of lenient judge (issue #38): one that passes long episodes, one that
scores the session's own reward, one that measures the speed's magnitude for a direction, one
whose overall score disagrees with its criteria, one that reports a measured value the
trajectory does not have; and one that reports the criteria's targets as its measured values.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.builders import FORWARD_REWARD
from tests.e2e.test_llm_session import llm_session, tools
from tests.fakes.agents import CRITERIA, JUDGE, agent_asked
from tests.fakes.judges import FORWARD_CRITERIA, GOOD, LENIENT, LONG_FAKE
from tests.fakes.llm_server import Reply


class Answers:
    """A model that writes the lenient judge, then fixes it into one that measures."""

    def __init__(self, judge: str, fixed: str, criteria: list[dict]) -> None:
        self.judge, self.fixed, self.criteria = judge, fixed, criteria
        self.agents: list[str] = []
        self.fixer_errors: list[str] = []

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        agent = agent_asked(body)
        self.agents.append(agent)
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": self.criteria})], 900, 200)
        if agent == "reward_author":
            return tools([("submit_reward", {"code": FORWARD_REWARD, "summary": "v_x"})], 900, 300)
        if agent == "judge_author":
            return tools([("submit_judge", {"code": self.judge, "summary": "lenient"})], 900, 300)
        if agent == "reviewer":
            return tools([("submit_review", {"verdict": "LGTM", "notes": "fine"})], 900, 50)
        if agent == "fixer":
            assert body["tools"][0]["name"] == "submit_judge", "only the judge needs a fix"
            self.fixer_errors.append(body["messages"][0]["content"])
            return tools([("submit_judge", {"code": self.fixed, "summary": "measures"})], 900, 300)
        raise AssertionError(f"unexpected agent {agent}")


CASES: dict[str, tuple[str, str, str, list[dict]]] = {
    # class: (lenient judge, the reason the fixer must read, the judge it fixes to, criteria)
    "passes_long_episodes": (*LONG_FAKE, JUDGE, CRITERIA),
    **{
        kind: (*LENIENT[kind], GOOD, FORWARD_CRITERIA)
        for kind in (
            "scores_the_reward",
            "measures_the_magnitude",
            "overall_score_disagrees",
            "invents_a_value",
            "returns_the_targets",
        )
    },
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", "") for block in content if isinstance(block, dict))


# One class in the fast tier (a real session each, 15-20 s here); the others in the whole suite.
@pytest.mark.parametrize(
    "kind",
    [
        kind if kind == "passes_long_episodes" else pytest.param(kind, marks=pytest.mark.slow)
        for kind in CASES
    ],
)
async def test_a_lenient_judge_is_sent_back_at_validation_with_the_reason(
    kind: str, temporal_env, s3, queue_prefix, monkeypatch
):
    lenient, reason, fixed, criteria = CASES[kind]
    answers = Answers(lenient, fixed, criteria)
    inputs = {
        "max_iterations": 1,
        "total_timesteps": 1024,
        "vlm_judge": False,
        "eval_max_steps": 30,
    }
    started = time.monotonic()
    async with llm_session(temporal_env, queue_prefix, monkeypatch, answers, **inputs) as (
        _,
        handle,
    ):
        result = await asyncio.wait_for(handle.result(), timeout=600)
    print(f"{kind}: session of {time.monotonic() - started:.1f} s")  # noqa: T201 - -s shows it

    # Sent back once, at validation, naming the episode: the fixer read why.
    assert answers.agents.count("fixer") == 1
    (error,) = [_text(c) for c in answers.fixer_errors]
    assert "judge_fn sent back at validation: " in error
    assert reason in " ".join(error.split()), error
    # The fixed judge measures: it passed validation, and the session ends judged by it.
    assert result.status in ("passed", "not_passed"), result.note
    (record,) = result.iterations
    assert {c.name for c in record.criteria} == {c["name"] for c in criteria}
    assert all(c.measured for c in record.criteria)
