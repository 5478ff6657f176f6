"""The plain-SB3 side of `policyforge bench-train`: what a reward-design script usually runs.

    python -m workers.local.bench_plain --env ENV --timesteps N --eval-every N --seed S
        [--weights JSON] [--threads N]

PPO with Stable-Baselines3's defaults on `gym.make(env_id)` (one env, SB3 adds Monitor and
DummyVecEnv itself), no VecNormalize, torch's default thread count, no sandbox. It is evaluated
by the same `PeriodicEval` as our trainer. Prints one {"event": "eval", ...} JSON line per
evaluation, then one {"event": "result", ...} line with its figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import gymnasium as gym
import torch
from stable_baselines3 import PPO

from activities.training.evaluation import PeriodicEval


class Reweighted(gym.Wrapper):
    """The env's reward as the sum of its info reward_* terms, each times its weight (1 when
    not given); the env's own reward stays in info["env_reward"]."""

    def __init__(self, env: gym.Env, weights: dict[str, float]) -> None:
        super().__init__(env)
        self.weights = weights

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["env_reward"] = reward
        terms = [
            self.weights.get(k, 1.0) * float(v) for k, v in info.items() if k.startswith("reward_")
        ]
        return obs, sum(terms) if terms else reward, terminated, truncated, info


def train_plain(
    env_id: str, timesteps: int, eval_every: int, seed: int, weights: dict[str, float] | None = None
) -> dict[str, Any]:
    """PPO with SB3's defaults on the env's own reward (reweighted by `weights`), evaluated
    every `eval_every` steps on the env's own reward; the "result" event (evaluations also
    printed as they happen)."""

    def emit(event: dict[str, Any]) -> None:
        print(json.dumps(event), flush=True)

    env = gym.make(env_id)
    if weights:
        env = Reweighted(env, weights)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0)
    evaluation = PeriodicEval(gym.make(env_id), eval_every, seed, emit=emit)
    t0 = time.monotonic()
    model.learn(total_timesteps=timesteps, callback=evaluation)
    wall = time.monotonic() - t0
    last = evaluation.evals[-1]
    return {
        "event": "result",
        "env_id": env_id,
        "timesteps_done": int(model.num_timesteps),
        # Up to the last evaluation, evaluations excluded (the figure both sides compare).
        "train_wall_s": last["train_wall_s"],
        "steps_per_second": round(last["timesteps"] / max(last["train_wall_s"], 1e-9), 1),
        "learn_wall_s": round(wall, 2),  # the whole learn() call, evaluations included
        "eval_seconds": round(evaluation.eval_seconds, 2),
        "evals": evaluation.evals,
        "torch_threads": torch.get_num_threads(),
        "hyperparameters": {"n_envs": 1, "n_steps": model.n_steps, "batch_size": model.batch_size},
    }


def main(argv: list[str] | None = None) -> int:
    """The command line: train, then print the result line."""
    p = argparse.ArgumentParser(prog="python -m workers.local.bench_plain")
    p.add_argument("--env", required=True, dest="env_id")
    p.add_argument("--timesteps", type=int, required=True)
    p.add_argument("--eval-every", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--weights", type=json.loads, default=None, help="JSON {info key: factor}")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    args = p.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    out = train_plain(args.env_id, args.timesteps, args.eval_every, args.seed, args.weights)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
