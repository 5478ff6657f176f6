"""bench-train: the rebuilt env reward, and a tiny end-to-end run of both sides."""

from __future__ import annotations

import numpy as np
import pytest

from activities.training.reward_runtime import load_reward
from activities.training.sim import make_env
from workers.cli.local_commands import cmd_bench_train
from workers.cli.main import _parser
from workers.local.bench_physics import bare_physics, physics_line, share
from workers.local.bench_train import (
    REWARD_FILENAME,
    BenchError,
    bench,
    check_reward,
    reward_source,
    table,
)


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Ant-v5"])
def test_reward_entries_sum_to_the_env_reward(env_id: str):
    # Guarded, through RewardWrapper: exactly what the child trains on.
    env = make_env(env_id, load_reward(reward_source(env_id), REWARD_FILENAME))
    env.action_space.seed(1)
    env.reset(seed=1)
    gaps = []
    for _ in range(300):
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert any(k.startswith("reward_") for k in info["reward_terms"])
        gaps.append(abs(reward - info["env_reward"]))
        if terminated or truncated:
            env.reset()
    env.close()
    assert max(gaps) < 1e-9
    assert check_reward(env_id) < 1e-9


def test_an_env_without_reward_entries_fails_loudly():
    with pytest.raises(BenchError, match="no reward_\\* entries"):
        check_reward("CartPole-v1", steps=5)


def test_cli_rejects_bad_input_in_one_line():
    args = _parser().parse_args(["bench-train", "--env", "Nope-v0", "--timesteps", "0"])
    with pytest.raises(SystemExit) as err:
        cmd_bench_train(args)
    assert "--env: unknown environment" in str(err.value) and "--timesteps" in str(err.value)


@pytest.mark.slow  # two trainers, side by side
def test_tiny_bench_runs_both_sides(monkeypatch: pytest.MonkeyPatch):
    # One torch thread for the plain side here: on a loaded 2-core test machine its default
    # two threads can make a single PPO update take tens of seconds.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    seen: list[tuple[str, int]] = []
    out = bench(
        "HalfCheetah-v5",
        4096,
        target=-1e9,  # reached at the first evaluation
        eval_every=2048,
        on_eval=lambda side, ev: seen.append((side, ev["timesteps"])),
        physics_seconds=0.3,
    )
    assert seen == [("ours", 2048), ("ours", 4096), ("plain", 2048), ("plain", 4096)]
    for side in ("ours", "plain"):
        figures = out[side]
        assert figures["steps_per_second"] > 0
        assert [e["timesteps"] for e in figures["evals"]] == [2048, 4096]
        assert figures["final_eval_length"] == 1000  # one full episode
        assert np.isfinite(figures["final_eval_return"])
        assert figures["time_to_target_s"] == figures["evals"][0]["train_wall_s"]
        walls = [e["train_wall_s"] for e in figures["evals"]]
        assert 0 < walls[0] < walls[1]
    assert out["ours"]["n_envs"] == 16 and out["plain"]["n_envs"] == 1
    assert out["steps_per_second_ratio"] > 0
    # Each side is shown against the bare physics measured in the same run, on one process.
    assert out["physics"]["procs"] == 1 and out["physics"]["steps_per_second"] > 0
    for side in ("ours", "plain"):
        # The share is kept to three decimals, so a small one is off by up to half a thousandth.
        assert out[side]["physics_share"] == pytest.approx(
            out[side]["steps_per_second"] / out["physics"]["steps_per_second"], abs=5.1e-4
        )
    text = table(out)
    assert "share of bare physics" in "\n".join(text) and text[-1].startswith("bare physics")


@pytest.mark.slow  # three trainers, side by side
def test_tiny_candidates_bench_runs_the_three_sides(monkeypatch: pytest.MonkeyPatch):
    from workers.local.bench_candidates import bench_candidates
    from workers.local.bench_candidates import table as candidates_table

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    lines: list[str] = []
    out = bench_candidates(
        "HalfCheetah-v5",
        1024,
        2,
        target=-1e9,
        eval_every=512,
        procs=2,
        say=lines.append,
        physics_seconds=0.3,
    )
    for side in ("batched", "per_candidate", "plain"):
        fig = out[side]
        assert fig["steps"] >= 2 * 1024
        assert set(fig["final_returns"]) == {"c0", "c1"}
        assert fig["reached_target"] == 2 and fig["time_to_target_all_s"] is not None
        assert fig["steps_per_second"] > 0
    # The batched side splits its candidates over 2 processes and reports where its time
    # went, per env step: the parts of the loop, physics and the policy within the rollout.
    seconds = out["batched"]["seconds"]
    # ("reward" is what training waited for, "scoring" the calls' own time beside the physics)
    assert set(seconds) == {"rollout", "physics", "policy", "reward", "scoring", "update"}
    # Each figure is rounded (to milliseconds): their sum may pass the rollout's by a little.
    assert seconds["physics"] + seconds["policy"] <= seconds["rollout"] + 0.15
    per_step = out["batched"]["per_sample_us"]
    assert set(per_step) == {"physics", "policy", "rollout other", "reward", "update"}
    assert all(v >= 0 for v in per_step.values()) and per_step["physics"] > 0
    assert out["physics"]["procs"] == 2 and out["physics"]["steps_per_second"] > 0
    for side in ("batched", "per_candidate", "plain"):
        assert 0 < out[side]["physics_share"] <= out[side]["training_physics_share"]
    text = "\n".join(candidates_table(out))
    assert "c1 forward x1 ctrl x0.5" in text and "plain SB3" in text
    assert "share of bare physics (training)" in text and "bare physics (zero actions" in text
    assert any(line.startswith("batched: ") and "steps/s" in line for line in lines)
    assert "batched: microseconds per env step (per process): physics " in text


def test_bare_physics_steps_the_envs_model_with_no_policy():
    one = bare_physics("Hopper-v5", 1, seconds=0.2, n_datas=4)
    assert one["procs"] == 1 and one["datas_per_process"] == 4
    assert one["steps_per_second"] > 0 and one["per_process"] == one["steps_per_second"]
    assert share(one["steps_per_second"] / 4, one) == pytest.approx(0.25, abs=1e-3)
    assert "4 envs" in physics_line(one)
    with pytest.raises(ValueError, match="must be positive"):
        bare_physics("Hopper-v5", 0)


def test_candidates_bench_rejects_bad_input_in_one_line():
    args = _parser().parse_args(
        ["bench-train", "--env", "HalfCheetah-v5", "--timesteps", "10", "--candidates", "0"]
    )
    with pytest.raises(SystemExit, match="--candidates: must be a positive integer"):
        cmd_bench_train(args)


def test_candidates_bench_refuses_unknown_ppo_settings_before_training():
    from workers.local.bench_candidates import bench_candidates

    with pytest.raises(BenchError, match=r"--ppo: unknown PPO setting\(s\) \['layers'\]"):
        bench_candidates("HalfCheetah-v5", 1000, 2, ppo={"layers": [64, 64]})
