"""Workers that run generated code say at start which sandbox layers hold, and refuse the code
(one line, non-retryable) where a required layer is missing, unless it is accepted knowingly."""

from __future__ import annotations

import uuid

import pytest
from structlog.testing import capture_logs
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.sandbox.layers import LAYERS
from activities.training.validate_activities import validate_reward
from workers.pools.pools import log_sandbox_layers
from workflows.contracts.training import ValidateRequest

ZERO = "def reward_fn(obs, action, next_obs, info):\n    return 0.0, {'zero': 0.0}\n"


async def test_train_and_judge_pools_log_the_layers_at_start():
    with capture_logs() as logs:
        await log_sandbox_layers(["train", "judge"])
    [entry] = [e for e in logs if e["event"] == "sandbox layers"]
    # This machine (kernel 6.18, root) gives every layer.
    assert sorted(entry["applied"]) == sorted(LAYERS) and entry["missing"] is None
    with capture_logs() as logs:
        await log_sandbox_layers(["llm"])
    assert logs == []  # the LLM pool runs no generated code


async def test_a_pool_without_a_required_layer_logs_the_refusal(monkeypatch):
    monkeypatch.setenv("POLICYFORGE_SANDBOX_TEST_DISABLE", "seccomp")
    with capture_logs() as logs:
        await log_sandbox_layers(["train"])
    [entry] = [e for e in logs if e["event"] == "sandbox refuses generated code"]
    assert entry["log_level"] == "error"
    assert "sandbox layer 'seccomp' is not available here" in entry["reason"]
    assert "POLICYFORGE_SANDBOX_ALLOW_MISSING=seccomp" in entry["reason"]


def _validate_request(source: str) -> ValidateRequest:
    store = ArtifactStore()
    store.ensure_bucket()
    key = store.put_text(f"sandbox-probe/{uuid.uuid4().hex[:8]}/reward_fn.py", source)
    return ValidateRequest(env_id="HalfCheetah-v5", reward_key=key, steps=16)


async def test_validation_is_refused_without_landlock_and_runs_when_accepted(s3, monkeypatch):
    req = _validate_request(ZERO)
    monkeypatch.setenv("POLICYFORGE_SANDBOX_TEST_DISABLE", "landlock-fs")
    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(validate_reward, req)
    assert err.value.type == "SandboxUnavailable" and err.value.non_retryable
    assert "'landlock-fs'" in str(err.value) and "\n" not in str(err.value)
    assert "POLICYFORGE_SANDBOX_ALLOW_MISSING=landlock-fs" in str(err.value)

    monkeypatch.setenv("POLICYFORGE_SANDBOX_ALLOW_MISSING", "landlock-fs")
    result = await ActivityEnvironment().run(validate_reward, req)
    assert result.ok, result.error
