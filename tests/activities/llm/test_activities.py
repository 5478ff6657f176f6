"""The LLM activities upload reward code where the workflow expects it (in-memory store)."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import activities.llm.activities as llm_activities
from activities.llm.activities import LLM_ACTIVITIES, author_reward, revise_reward
from workflows.contracts.context import OFFLINE_LABEL
from workflows.contracts.judging import Judgment
from workflows.contracts.llm import AuthorRequest, AuthorResult, ReviseRequest, ReviseResult
from workflows.contracts.session import IterationEvidence
from workflows.contracts.training import TrainResult


class MemoryStore:
    objects: dict[str, str] = {}

    def put_text(self, key: str, text: str) -> str:
        self.objects[key] = text
        return key

    def exists(self, key: str) -> bool:
        return key in self.objects

    def get_text(self, key: str) -> str:
        return self.objects[key]


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    MemoryStore.objects = {}
    monkeypatch.setattr(llm_activities, "ArtifactStore", MemoryStore)
    return MemoryStore.objects


PROMPT = "run forward as fast as possible"


def _author(prompt: str = PROMPT, model: str = "offline") -> AuthorResult:
    req = AuthorRequest(
        session_id="sess", iteration=1, prompt=prompt, env_id="HalfCheetah-v5", llm_model=model
    )
    return ActivityEnvironment().run(author_reward, req)


def _train(**fields) -> TrainResult:
    return TrainResult(
        run_prefix="p/",
        model_key="m",
        vecnormalize_key="v",
        timesteps_done=2048,
        term_means={"forward": -0.02, "ctrl": -0.3},
        **fields,
    )


def _revise(first: AuthorResult, iteration: int, **fields) -> ReviseResult:
    """The offline reviser's answer for `iteration`, after `first` authored iteration 1."""
    req = ReviseRequest(
        session_id="sess",
        iteration=iteration,
        prompt=PROMPT,
        env_id="HalfCheetah-v5",
        llm_model="offline",
        criteria=first.criteria,
        timesteps=2048,
        timesteps_cap=4096,
        **fields,
    )
    return ActivityEnvironment().run(revise_reward, req)


def test_registered_names():
    names = {fn.__temporal_activity_definition.name for fn in LLM_ACTIVITIES}
    assert names == {
        "elicit_criteria",
        "author_reward",
        "author_judge",
        "review_reward",
        "fix_code",
        "revise_reward",
        "synthesize_judgment",
        "ask_video",
        "vlm_criteria",
        "vlm_judge",
    }


def test_author_uploads_reward_code(store: dict[str, str]):
    result = _author()
    assert result.reward.key == "sessions/sess/iter_1/reward_fn.py"
    assert "class ForwardReward(RewardFunction)" in store[result.reward.key]
    assert result.model_label == OFFLINE_LABEL
    assert result.reward.template == "forward" and result.reward.params["ctrl_weight"] == 0.1
    assert result.criteria[0].metric == "mean_x_velocity"


def test_author_refusals_are_non_retryable(store: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ApplicationError) as info:
        _author("juggle three balls")
    assert info.value.type == "IntentNotSupported" and info.value.non_retryable
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ApplicationError) as info:
        _author(model="claude-sonnet-4-6")
    assert info.value.type == "LLMAuthError" and info.value.non_retryable
    assert "ANTHROPIC_API_KEY" in info.value.message
    assert store == {}


def test_revise_uploads_revised_code_for_the_next_iteration(store: dict[str, str]):
    first = _author()
    out = _revise(
        first,
        2,
        reward=first.reward,
        judgment=Judgment(score=0.1, passed=False, diagnosis="slow", failure_tags=["too_slow"]),
        train=_train(still_improving=True),
    )
    assert out.reward.key == "sessions/sess/iter_2/reward_fn.py"
    assert store[out.reward.key] != store[first.reward.key]
    assert out.reward.params["ctrl_weight"] == 0.05
    assert out.timesteps == 3072
    assert out.changes


def test_offline_revision_rebases_on_a_better_earlier_iteration(store):
    """Iteration 2 halved the control cost and did worse: iteration 3 starts from iteration 1's
    reward again, and says so."""
    first = _author()
    train = _train()
    worse = first.reward.model_copy(
        update={
            "key": "sessions/sess/iter_2/reward_fn.py",
            "params": {**first.reward.params, "ctrl_weight": 0.05},
        }
    )
    good = Judgment(score=0.5, passed=False, diagnosis="ok")
    bad = Judgment(score=0.2, passed=False, diagnosis="worse")
    best = IterationEvidence(iteration=1, reward=first.reward, judgment=good, train=train)
    rebased = _revise(first, 3, reward=worse, judgment=bad, train=train, best=best)
    assert rebased.base_iteration == 1
    assert rebased.changes.startswith("Rebased on iteration 1 (score 0.50; the last scored 0.20)")
    # Revised from iteration 1's parameters (ctrl 0.1 -> 0.05), not from iteration 2's 0.05.
    assert rebased.reward.params["ctrl_weight"] == 0.05
    onward = _revise(first, 3, reward=worse, judgment=bad, train=train)
    assert onward.base_iteration == 2 and onward.reward.params["ctrl_weight"] == 0.025
