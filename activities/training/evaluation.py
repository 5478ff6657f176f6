"""Periodic deterministic evaluation during training, with the evaluation time kept off the clock.

Used by `ppo.train` (`TrainJob.eval_every`) inside the child and by the plain-SB3 side of
`policyforge bench-train` (`workers.local.bench_plain`), so both sides are measured by
the same code. Every `every` timesteps the current policy plays one full episode on a separate
env (deterministic actions, reset with the same seed each time), through the training
VecNormalize's observation statistics when there is one (observations only: the return is the
env's own). Evaluations run right after a PPO update (at the first rollout start at or past each
multiple of `every`, and at the end of training), so the policy evaluated at T timesteps has
been trained on all T of them and the clock includes the update that produced it.

Each evaluation appends {"timesteps", "train_wall_s", "eval_return", "eval_length", "eval_s"}
to `evals` and to a JSON-lines file, and is emitted as {"event": "eval", ...}. `train_wall_s`
is the time since training started minus the time spent evaluating.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy

from activities.training.checkpoints import next_multiple

Emit = Callable[[dict[str, Any]], None]


def deterministic_act(model: Any, venv: Any = None) -> Callable[[np.ndarray], np.ndarray]:
    """The policy's deterministic action for a raw observation (or a batch of them), normalised
    through `venv`'s statistics when given (normalize_obs reads them and never updates them)."""
    policy = model.policy

    def normalized(obs: np.ndarray) -> np.ndarray:
        return venv.normalize_obs(obs) if venv is not None else obs

    if not (
        isinstance(policy, ActorCriticPolicy)
        and isinstance(policy.action_space, gym.spaces.Box)
        and not policy.squash_output
    ):
        return lambda obs: model.predict(normalized(obs), deterministic=True)[0]

    # predict() switches training mode, checks and reshapes on every call: over half of an
    # evaluation step. This is its deterministic path for a Gaussian PPO policy, called
    # directly: the mean action, clipped to the action space as predict clips it.
    policy.set_training_mode(False)
    low, high = policy.action_space.low, policy.action_space.high

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(np.atleast_2d(np.asarray(normalized(obs), dtype=np.float32)))
            # A Box observation's preprocessing is the float cast above.
            features = policy.pi_features_extractor(x)
            mean = policy.action_net(policy.mlp_extractor.forward_actor(features))
        actions = np.clip(mean.numpy(), low, high)
        return actions[0] if np.ndim(obs) == 1 else actions

    return act


def run_episode(
    env: gym.Env, act: Callable[[np.ndarray], np.ndarray], seed: int
) -> tuple[float, int]:
    """One full episode (to termination or the env's time limit): (env return, length)."""
    obs, _ = env.reset(seed=seed)
    ret, length = 0.0, 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        ret += float(reward)
        length += 1
        if terminated or truncated:
            return ret, length


class PeriodicEval(BaseCallback):
    """One deterministic episode of the env's own return every `every` timesteps, its time kept
    off the training clock (see the module docstring)."""

    def __init__(
        self,
        env: gym.Env,
        every: int,
        seed: int,
        path: Path | None = None,
        emit: Emit | None = None,
    ) -> None:
        super().__init__()
        if every <= 0:
            raise ValueError(f"eval every must be positive (got {every})")
        self.env = env
        self.every = every
        self.seed = seed
        self.path = path
        self.emit = emit
        self.evals: list[dict[str, Any]] = []
        self.eval_seconds = 0.0
        self._next = every
        self._file: IO[str] | None = None

    def _init_callback(self) -> None:
        # A resumed run carries its timestep counter: the next evaluation follows on from it.
        self._next = next_multiple(self.num_timesteps, self.every)

    def _on_training_start(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a" if self.num_timesteps > 0 else "w")
        self._t0 = time.monotonic()
        self.eval_seconds = 0.0

    def train_wall(self) -> float:
        """Seconds since training started, evaluations excluded."""
        return time.monotonic() - self._t0 - self.eval_seconds

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        # After the previous update: mid-rollout the policy has not learnt from the new steps.
        if self.num_timesteps >= self._next:
            self._next = next_multiple(self.num_timesteps, self.every)
            self._evaluate()

    def _on_training_end(self) -> None:
        # After the last update: always the final evaluation (its wall is the whole run's).
        if not self.evals or self.evals[-1]["timesteps"] != self.num_timesteps:
            self._evaluate()
        if self._file is not None:
            self._file.close()
        self.env.close()

    def _evaluate(self) -> None:
        wall = self.train_wall()
        t = time.monotonic()
        act = deterministic_act(self.model, self.model.get_vec_normalize_env())
        ret, length = run_episode(self.env, act, self.seed)
        spent = time.monotonic() - t
        self.eval_seconds += spent
        row = {
            "timesteps": int(self.num_timesteps),
            "train_wall_s": round(wall, 3),
            "eval_return": ret,
            "eval_length": length,
            "eval_s": round(spent, 3),
        }
        self.evals.append(row)
        if self._file is not None:
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()
        if self.emit is not None:
            self.emit({"event": "eval", **row})
