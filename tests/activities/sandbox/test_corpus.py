"""The sandbox against hostile and broken reward code, through the train pool's real activity.

Each case goes where generated code goes in a session: S3, then `validate_reward`, which runs it
on real env steps in the confined child. The activity (the worker) must come back with a clear
one-line error every time, and nothing may appear outside the child's scratch directory.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.training.validate_activities import validate_reward
from tests.activities.sandbox.corpus import (
    CANARY,
    DUCK_TYPED_CLASS,
    HOSTILE,
    PLAIN_REWARD_FN,
    STATEFUL_CLOSURE,
    SUBCLASS_WITH_SUPER,
)
from workflows.contracts.training import ValidateRequest, ValidateResult


async def validate(source: str, env_id: str = "HalfCheetah-v5", steps: int = 64) -> ValidateResult:
    key = ArtifactStore().put_text(f"sandbox/{uuid.uuid4().hex[:8]}/reward_fn.py", source)
    req = ValidateRequest(env_id=env_id, reward_key=key, steps=steps)
    return await ActivityEnvironment().run(validate_reward, req)


@pytest.fixture(autouse=True)
def no_canary():
    Path(CANARY).unlink(missing_ok=True)
    yield
    assert not os.path.exists(CANARY), "generated code wrote outside its scratch directory"


def test_the_corpus_is_large_and_distinct():
    assert len(HOSTILE) >= 30
    assert len({case_id for case_id, _, _ in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize(("source", "expected"), [(s, e) for _, s, e in HOSTILE],
                         ids=[i for i, _, _ in HOSTILE])  # fmt: skip
async def test_hostile_or_broken_code_is_rejected_with_one_clear_line(s3, source, expected):
    started = time.monotonic()
    result = await validate(source)
    assert not result.ok, "the sandbox let it through"
    assert result.error and expected in result.error, result.error
    assert "\n" not in result.error and len(result.error) <= 500
    assert "reward_fn.py" in result.error or "reward" in result.error
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("source", "env_id", "steps"),
    [
        (PLAIN_REWARD_FN, "HalfCheetah-v5", 64),
        # Random actions drop the pole within a few dozen steps: several episode starts.
        (STATEFUL_CLOSURE, "InvertedPendulum-v5", 400),
        (DUCK_TYPED_CLASS, "Hopper-v5", 64),
        (SUBCLASS_WITH_SUPER, "HalfCheetah-v5", 64),
    ],
    ids=["plain_reward_fn", "closure_reset_on_episode_start", "duck_typed_class", "subclass"],
)
async def test_benign_rewards_written_the_usual_ways_pass(s3, source, env_id, steps):
    result = await validate(source, env_id, steps)
    assert result.ok, result.error
    assert result.term_magnitudes


async def test_secrets_are_not_in_the_childs_environment(s3, monkeypatch):
    # The reward can only see what the child sees: read the child's environment through the
    # judge path's scratch directory instead of the reward (which cannot import os).
    from activities.runner.supervisor import child_env

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("TEMPORAL_API_KEY", "tmprl-secret")
    env = child_env()
    assert not {"ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "TEMPORAL_API_KEY"} & set(env)
    assert "secret" not in " ".join(env.values())
