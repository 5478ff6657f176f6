"""SAC and TD3 through the same child, outputs and evaluation as PPO."""

from __future__ import annotations

import json

import pytest
from stable_baselines3 import SAC, TD3

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.training.job import EVALUATE, TRAIN
from tests.activities.training.rewards import RUN_FORWARD


@pytest.mark.parametrize(("algo", "cls"), [("sac", SAC), ("td3", TD3)])
async def test_off_policy_run_trains_evaluates_and_replays(tmp_path, algo, cls):
    # 150 steps: 100 of random actions (learning_starts), then 50 gradient steps.
    train = ChildRequest(
        env_id="HalfCheetah-v5", reward_source=RUN_FORWARD, timesteps=150, algo=algo
    )
    summary = await run_child(TRAIN, train, tmp_path, timeout_s=300)
    assert summary["timesteps_done"] >= 150
    assert summary["hyperparameters"]["algo"] == algo
    rows = [json.loads(x) for x in (tmp_path / "metrics/scalars.jsonl").read_text().splitlines()]
    assert rows and "critic_loss" in rows[-1] and "ep_return_mean" in rows[-1]

    model = cls.load(str(tmp_path / "model.zip"), device="cpu")  # plain SB3
    assert model.num_timesteps >= 150
    evaluate = ChildRequest(
        env_id="HalfCheetah-v5",
        reward_source=RUN_FORWARD,
        algo=algo,
        max_steps=20,
        record_video=False,
    )
    result = await run_child(EVALUATE, evaluate, tmp_path, timeout_s=120)
    assert result["episode_length"] == 20


@pytest.mark.slow  # off-policy training, twice
async def test_a_resumed_off_policy_run_keeps_the_metrics_before_its_checkpoint(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    train = ChildRequest(
        env_id="HalfCheetah-v5",
        reward_source=RUN_FORWARD,
        timesteps=300,
        algo="sac",
        checkpoint_every=150,
    )
    await run_child(TRAIN, train, first, timeout_s=300)
    checkpoint = first / "checkpoints" / "step_150"
    before = (checkpoint / "scalars.jsonl").read_text().splitlines()
    assert before, "the checkpoint holds the metrics so far"

    again = train.model_copy(update={"resume_dir": str(checkpoint)})
    summary = await run_child(TRAIN, again, second, timeout_s=300)
    assert summary["resumed_from_timesteps"] == 150 and summary["timesteps_done"] >= 300
    after = (second / "metrics/scalars.jsonl").read_text().splitlines()
    # The resumed run's metrics go on from the checkpoint's: earlier lines first, then more.
    assert after[: len(before)] == before and len(after) > len(before)
    steps = [json.loads(line)["timesteps"] for line in after]
    assert steps == sorted(steps) and steps[-1] >= 300
