"""A whole LLM session through the real workflow and real workers, with the real Anthropic SDK
pointed at a local server that speaks the Messages API and replays scripted answers."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest

from activities.artifacts import ArtifactStore
from tests.fakes.llm_server import Error, FakeLLMServer, Reply, Tools
from workers.pools import run_pools
from workers.settings import Settings
from workflows.models import SessionResult, task_queue
from workflows.session import SessionWorkflow

CRITERIA = [
    {
        "name": "forward_speed",
        "description": "It runs forward.",
        "measure": "mean of info_x_velocity over the episode, m/s",
        "target": 1.0,
        "direction": "at_least",
    },
    {
        "name": "stays_up",
        "description": "It does not end the episode early.",
        "measure": "1 when terminated[-1] is false",
        "target": 1.0,
        "direction": "at_least",
    },
    {
        "name": "calm_actions",
        "description": "It does not thrash.",
        "measure": "mean absolute action",
        "target": 0.9,
        "direction": "at_most",
    },
]

# Runs fine until the first step: then NameError, which the fixer must repair.
BROKEN_REWARD = """
import numpy as np

class RunForward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        forward = float(vx)
        return forward, {"forward": forward}
"""

FIXED_REWARD = """
import numpy as np

class RunForward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        terms = {
            "forward": float(info["x_velocity"]),
            "ctrl": -0.1 * float(np.sum(np.square(action))),
        }
        return sum(terms.values()), terms

    @property
    def latex(self):
        return r"r = v_x - 0.1 \\|a\\|^2"

    @property
    def terms(self):
        return ["forward", "ctrl"]
"""

REVISED_REWARD = FIXED_REWARD.replace("-0.1 *", "-0.05 *").replace("0.1 \\\\|", "0.05 \\\\|")

JUDGE = """
import numpy as np

def judge_fn(trajectory):
    vx = float(np.mean(trajectory["info_x_velocity"]))
    effort = float(np.mean(np.abs(trajectory["action"])))
    scores = {
        "forward_speed": min(max(vx / 1.0, 0.0), 1.0),
        "stays_up": 0.0 if trajectory["terminated"][-1] else 1.0,
        "calm_actions": 1.0 if effort <= 0.9 else max(0.0, 1.0 - (effort - 0.9)),
    }
    tags = ["too_slow"] if scores["forward_speed"] < 1 else []
    return {
        "score": sum(scores.values()) / 3,
        "criteria": scores,
        "diagnosis": f"mean forward velocity {vx:.2f} m/s against a target of 1.00",
        "failure_tags": tags,
    }
"""

AGENTS = {
    "visual judge planner": "vlm_criteria",
    "visual judge.": "vlm_judge",
    "intent elicitor": "elicitor",
    "reward author": "reward_author",
    "judge author": "judge_author",
    "reward reviewer": "reviewer",
    "code fixer": "fixer",
    "reward reviser": "reviser",
}


def agent_of(system: str) -> str:
    first = system.strip().splitlines()[0]
    return next(name for key, name in AGENTS.items() if f"policyforge's {key}" in first)


class Script:
    """Answers each agent as a model would; the reviser's first call is rate limited."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self.reviser_calls = 0

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        system = body.get("system")
        if isinstance(system, list):
            system = " ".join(block.get("text", "") for block in system)
        agent = agent_of(str(system))
        self.calls.append((agent, time.monotonic()))
        if agent == "vlm_criteria":
            items = [
                {"name": "moves_forward", "look_for": "the body travels to the right"},
                {"name": "stays_up", "look_for": "the back stays on top"},
            ]
            return Tools(
                [("submit_visual_criteria", {"criteria": items})],
                input_tokens=500,
                output_tokens=60,
            )
        if agent == "vlm_judge":
            verdicts = [
                {"name": "moves_forward", "verdict": "met", "reason": "travels right"},
                {"name": "stays_up", "verdict": "met", "reason": "never flips"},
            ]
            return Tools(
                [("submit_visual_judgment", {"verdicts": verdicts})],
                input_tokens=2000,
                output_tokens=80,
            )
        if agent == "elicitor":
            return Tools(
                [("submit_criteria", {"criteria": CRITERIA})], input_tokens=1000, output_tokens=200
            )
        if agent == "reward_author":
            return Tools(
                [("submit_reward", {"code": BROKEN_REWARD, "summary": "v_x"})],
                input_tokens=1100,
                output_tokens=300,
            )
        if agent == "judge_author":
            return Tools(
                [("submit_judge", {"code": JUDGE, "summary": "speed"})],
                input_tokens=1200,
                output_tokens=400,
            )
        if agent == "reviewer":
            return Tools(
                [("submit_review", {"verdict": "LGTM", "notes": "fine"})],
                input_tokens=900,
                output_tokens=50,
            )
        if agent == "fixer":
            args = {
                "code": FIXED_REWARD,
                "latex": "r = v_x - 0.1|a|^2",
                "terms": ["forward", "ctrl"],
            }
            return Tools([("submit_reward", args)], input_tokens=1300, output_tokens=350)
        self.reviser_calls += 1
        if self.reviser_calls == 1:
            return Error(429, "rate limited, slow down", headers={"retry-after": "1"})
        args = {
            "diagnosis": "too slow",
            "changes": "halved the control cost",
            "code": REVISED_REWARD,
            "terms": ["forward", "ctrl"],
            "timesteps": 1024,
        }
        return Tools([("submit_revision", args)], input_tokens=1400, output_tokens=500)


# Tokens of the calls that succeed, in the order of the script above.
EXPECTED_INPUT = 1000 + 1100 + 1200 + 500 + 900 + 1300 + 2000 + 1400 + 900 + 2000
EXPECTED_OUTPUT = 200 + 300 + 400 + 60 + 50 + 350 + 80 + 500 + 50 + 80


async def test_llm_session_end_to_end(temporal_env, s3, queue_prefix, monkeypatch):
    script = Script()
    with FakeLLMServer() as server:
        server.responder = script
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
        settings = Settings(queue_prefix=queue_prefix, train_concurrency=2)
        pools = asyncio.create_task(
            run_pools(
                temporal_env.client, settings, ["llm", "train", "judge"], handle_signals=False
            )
        )
        try:
            handle = await temporal_env.client.start_workflow(
                SessionWorkflow.run,
                {
                    "prompt": "run forward",
                    "env_id": "HalfCheetah-v5",
                    "llm_model": "claude-sonnet-4-6",
                    "total_timesteps": 1024,
                    "max_iterations": 2,
                    "pass_threshold": 1.0,
                    "eval_max_steps": 30,
                    "queue_prefix": queue_prefix,
                },
                id=f"llm-e2e-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue("llm", queue_prefix),
                result_type=SessionResult,
            )
            result = await asyncio.wait_for(handle.result(), timeout=600)
        finally:
            pools.cancel()
            await asyncio.gather(pools, return_exceptions=True)

    agents = [a for a, _ in script.calls]
    # Criteria first; reward and judge authored in parallel; review; the fix after the broken
    # code failed validation; the rate-limited revision and its retry; the revision's review.
    assert agents[0] == "elicitor"
    assert sorted(agents[1:4]) == ["judge_author", "reward_author", "vlm_criteria"]
    assert agents[4:] == [
        "reviewer", "fixer", "vlm_judge", "reviser", "reviser", "reviewer", "vlm_judge"
    ]  # fmt: skip
    # Claude takes images, not video: the visual judge was shown frames of the rollout.
    seen = next(r for r in server.requests if "visual judge." in r.prompt().system)
    images = [p for p in seen.body["messages"][0]["content"] if p.get("type") == "image"]
    assert len(images) == 8
    fixer = next(r.prompt() for r in server.requests if "code fixer" in r.prompt().system)
    assert "NameError: name 'vx' is not defined" in fixer.user
    revisers = [t for a, t in script.calls if a == "reviser"]
    assert revisers[1] - revisers[0] >= 0.9, "the retry must wait for Retry-After"
    # The key reached the provider, in its header only.
    for r in server.requests:
        sent = r.headers.get("x-api-key", "") + r.headers.get("authorization", "")
        assert "sk-ant-test-secret" in sent

    assert result.model_label == "claude-sonnet-4-6" and not result.passed
    assert len(result.iterations) == 2
    assert [c.name for c in result.criteria] == [c["name"] for c in CRITERIA]
    usage = result.llm_usage
    assert usage.calls == 10
    assert (usage.input_tokens, usage.output_tokens) == (EXPECTED_INPUT, EXPECTED_OUTPUT)
    assert usage.cost_usd == pytest.approx((EXPECTED_INPUT * 3 + EXPECTED_OUTPUT * 15) / 1e6)
    assert sum(r.llm_usage.calls for r in result.iterations) == 10
    assert result.iterations[0].best_run and "Video: every visual criterion met" in (
        result.iterations[0].diagnosis
    )

    store = ArtifactStore()
    first, second = result.iterations
    assert store.get_text(first.reward_key) == FIXED_REWARD.strip() + "\n"
    assert first.reward_key.endswith("reward_fn.fix1.py")
    assert "0.05" in store.get_text(second.reward_key)
    assert second.changes == "halved the control cost"
    assert store.exists(f"sessions/{result.session_id}/judge_fn.py")
    # The judge code scored the evaluation checkpoints too, in the same child process.
    judged = json.loads(store.get_text(first.best_run.run_prefix + "judgment.json"))
    assert "100" in judged["checkpoints"]
    assert "forward velocity" in first.diagnosis
