"""A session whose reward candidates shape the env (observation, action, initial state and
termination) trains them batched, is judged in the unshaped env, and its runs replay from the
saved artifacts alone (real workflow, workers, sandboxes and PPO; the LLM at the wire edge)."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from activities.artifacts import ArtifactStore
from activities.training.evaluation import deterministic_act
from activities.training.policy_io import load_model, load_vecnormalize
from activities.training.sim import make_env
from tests.builders import FORWARD_REWARD
from tests.e2e.test_llm_session import llm_session, tools
from tests.fakes.agents import CRITERIA, JUDGE, agent_of
from tests.fakes.llm_server import Reply
from workflows.contracts import keys

# Slow tier: an LLM session training batched candidates.
pytestmark = pytest.mark.slow

SHAPED_REWARD = (
    FORWARD_REWARD
    + """
# The policy sees the observation without the torso angle, at twice the scale, commands half
# the action range, starts from half the usual reset noise, and trains on 500-step episodes.
SHAPING = {
    "obs_drop": [1],
    "obs_scale": 2.0,
    "action_scale": 0.5,
    "init_noise": 0.5,
    "max_episode_steps": 500,
}
"""
)
EVAL_STEPS = 40


class Script:
    """Criteria, two reward candidates (one plain, one shaped), the judge, a quick review."""

    def __init__(self) -> None:
        self.authored = 0

    def __call__(self, provider: str, body: dict[str, Any]) -> Reply:
        system = body.get("system")
        if isinstance(system, list):
            system = " ".join(block.get("text", "") for block in system)
        agent = agent_of(str(system))
        if agent == "elicitor":
            return tools([("submit_criteria", {"criteria": CRITERIA})], 1000, 200)
        if agent == "reward_author":
            self.authored += 1
            code = SHAPED_REWARD if self.authored == 2 else FORWARD_REWARD
            return tools([("submit_reward", {"code": code, "summary": "v_x"})], 1100, 300)
        if agent == "judge_author":
            return tools([("submit_judge", {"code": JUDGE, "summary": "up and moving"})], 1200, 400)
        assert agent == "reviewer", agent
        return tools([("submit_review", {"verdict": "LGTM", "notes": "fine"})], 900, 50)


async def test_shaped_candidates_train_batched_and_replay_in_the_unshaped_env(
    temporal_env, s3, queue_prefix, monkeypatch
):
    async with llm_session(
        temporal_env,
        queue_prefix,
        monkeypatch,
        Script(),
        total_timesteps=2048,
        max_iterations=1,
        candidates=2,
        vlm_judge=False,
        eval_max_steps=EVAL_STEPS,
    ) as (_server, handle):
        result = await asyncio.wait_for(handle.result(), timeout=400)

    record = result.iterations[0]
    assert record.batched and sorted(r.candidate for r in record.run_results) == [0, 1]
    store = ArtifactStore()
    shaped = [
        k for k in range(2) if "SHAPING" in store.get_text(keys.reward_key(result.session_id, 1, k))
    ]
    assert len(shaped) == 1, "one candidate carries SHAPING"
    for k in range(2):
        prefix = f"sessions/{result.session_id}/iter_1/c{k}_default_seed_0/"
        with np.load(io.BytesIO(store.get_bytes(prefix + "trajectories/eval.npz"))) as npz:
            recorded = {key: npz[key] for key in ("obs", "action")}
        # Judged in the unshaped env: the full observation and the full episode cap.
        assert recorded["obs"].shape == (EVAL_STEPS, 17)
        # The saved model.zip + vecnormalize.npz replay the judged episode exactly, on the
        # env's own observations, with no shaping adapter.
        env = make_env("HalfCheetah-v5", None)
        model = load_model("ppo", _local(store, prefix + "model.zip"))
        venv = load_vecnormalize(
            _local(store, prefix + "vecnormalize.npz"), DummyVecEnv([lambda env=env: env])
        )
        act = deterministic_act(model, venv)
        obs, _ = env.reset(seed=0)
        for t in range(EVAL_STEPS):
            np.testing.assert_allclose(obs, recorded["obs"][t], atol=1e-9)
            action = act(obs)
            np.testing.assert_allclose(action, recorded["action"][t], atol=1e-6)
            obs, *_ = env.step(action)
        if k in shaped:
            # The dropped input has no weight: changing it changes no action.
            probe = recorded["obs"].copy()
            probe[:, 1] += 0.5
            np.testing.assert_allclose(act(probe), act(recorded["obs"]), atol=1e-6)


def _local(store: ArtifactStore, key: str) -> str:
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / key.rsplit("/", 1)[-1]
    path.write_bytes(store.get_bytes(key))
    return str(path)
