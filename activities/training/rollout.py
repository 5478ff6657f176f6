"""The deterministic evaluation rollout, its video and trajectory: run inside the child only."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from activities.behaviours.layout import SENSOR_KEYS
from activities.training import policy_io
from activities.training.evaluation import deterministic_act
from activities.training.phase_clock import model_inputs
from activities.training.reward_runtime import LoadedReward, Rewards
from activities.training.run_spec import EvalJob
from activities.training.sim import make_env, scalar_info
from activities.training.video import Mp4Writer, render_video, video_stride
from workflows.contracts.keys import TRAJECTORY, VIDEO

# Threads drawing the evaluation video: the core training used is free by then.
RENDER_THREADS = 2


def evaluate(job: EvalJob, reward: Rewards | LoadedReward) -> dict[str, Any]:
    """One deterministic episode of the trained policy under `reward`: trajectory .npz and
    (when asked) video in job.out_dir; the episode's figures."""
    arrays, stats = play_evaluation(job, reward)
    frames = render_evaluation(job, arrays) if job.record_video else 0
    return evaluation_figures(job, arrays, stats, frames)


def play_evaluation(
    job: EvalJob, reward: Rewards | LoadedReward
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Play the evaluation episode and save its trajectory; its arrays and stats."""
    env = make_env(job.env_id, reward, job.env_kwargs)
    try:
        # The raw env is stepped directly (raw obs for the trajectory); VecNormalize only
        # normalises the policy's input with the statistics frozen at the end of training.
        model = load_model(job.algo, job.model_path)
        declared = DummyVecEnv([lambda: model_inputs(env, model)])
        vecnorm = policy_io.load_vecnormalize(job.vecnormalize_path, declared)
        vecnorm.training = False
        vecnorm.norm_reward = False
        act = deterministic_act(model, vecnorm)
        arrays, stats = collect(env, act, job.seed, job.max_steps)
    finally:
        env.close()
    traj = job.out_dir / TRAJECTORY
    traj.parent.mkdir(parents=True, exist_ok=True)
    save_trajectory(traj, arrays)
    return arrays, stats


def render_evaluation(job: EvalJob, arrays: dict[str, np.ndarray]) -> int:
    """The evaluation episode's video, drawn from its states; the frames written."""
    return render_video(
        job.env_id,
        job.seed,
        arrays,
        job.out_dir / VIDEO,
        size=job.video_size,
        env_kwargs=job.env_kwargs,
        threads=RENDER_THREADS,
    )


def evaluation_figures(
    job: EvalJob, arrays: dict[str, np.ndarray], stats: dict[str, Any], frames: int
) -> dict[str, Any]:
    """What the evaluate mode returns: the episode's figures and its files (relative)."""
    return {
        **stats,
        "trajectory": TRAJECTORY,
        "video": VIDEO if job.record_video else None,
        "fps": video_stride(float(arrays["meta_dt"]))[1],
        "frames": frames,
    }


def save_trajectory(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """An episode's arrays as the trajectory .npz (compressed; plain arrays, no pickles)."""
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]  # stub: a key may be allow_pickle


def load_model(algo: str, path: Path) -> Any:
    """A trained model of any of our algorithms, for acting only: read without unpickling
    (policy_io), with a one-transition replay buffer for SAC/TD3 (acting never fills it)."""
    small = {"buffer_size": 1} if algo in ("sac", "td3") else None
    return policy_io.load_model(algo, path, algo_kwargs=small)


def random_trajectory(
    env_id: str, reward: Rewards | LoadedReward, steps: int, seed: int
) -> dict[str, np.ndarray]:
    """A random-action episode in the evaluation's format: what judge code is tried on."""
    env = make_env(env_id, reward)
    env.action_space.seed(seed)
    try:
        arrays, _ = collect(env, lambda _obs: env.action_space.sample(), seed, steps)
    finally:
        env.close()
    return arrays


def _limit(env: Any, max_steps: int | None) -> int:
    limit = env.spec.max_episode_steps if env.spec and env.spec.max_episode_steps else 1000
    return limit if max_steps is None else min(limit, max_steps)


class _Episode:
    """One episode's rows as it is played, turned into the trajectory arrays at its end."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.rows: dict[str, list[Any]] = defaultdict(list)
        self.env_ret = 0.0
        self.terminated = self.truncated = False
        self.info_keys: list[str] | None = None

    def record(self, obs: np.ndarray, action: np.ndarray, step: tuple) -> bool:
        """Add one env.step's result; True when the episode is over."""
        next_obs, _, terminated, truncated, info = step
        rows = self.rows
        scalars = scalar_info(info)
        self.info_keys = self.info_keys if self.info_keys is not None else sorted(scalars)
        rows["obs"].append(obs)
        rows["next_obs"].append(next_obs)
        rows["action"].append(np.asarray(action, dtype=np.float64))
        rows["env_reward"].append(info["env_reward"])
        rows["qpos"].append(info["qpos"])
        rows["qvel"].append(info["qvel"])
        for key in SENSOR_KEYS:
            if key in info:  # feet and knees (activities/behaviours/sensors.py)
                rows[key].append(info[key])
        rows["terminated"].append(bool(terminated))
        rows["truncated"].append(bool(truncated))
        for k in self.info_keys:
            rows[f"info_{k}"].append(scalars.get(k, np.nan))
        self.env_ret += info["env_reward"]
        self.terminated, self.truncated = bool(terminated), bool(truncated)
        return self.terminated or self.truncated

    def finish(
        self, scored: list[tuple[float, dict[str, float]]]
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        rows, env = self.rows, self.env
        rewards = [r for r, _ in scored]
        term_keys = sorted(scored[0][1]) if scored else []
        rows["reward"] = rewards
        for k in term_keys:
            rows[f"term_{k}"] = [terms.get(k, np.nan) for _, terms in scored]
        arrays: dict[str, np.ndarray] = {
            k: np.asarray(v, dtype=bool if k in ("terminated", "truncated") else np.float64)
            for k, v in rows.items()
        }
        arrays["meta_env_id"] = np.array(env.spec.id if env.spec else "")
        arrays["meta_dt"] = np.array(float(env.unwrapped.dt))
        stats = {
            "episode_return": float(sum(rewards)),
            "env_return": self.env_ret,
            "episode_length": len(rewards),
            "terminated": self.terminated,
        }
        return arrays, stats


def collect(
    env: Any,
    act: Callable[[np.ndarray], np.ndarray],
    seed: int,
    max_steps: int | None,
    writer: Mp4Writer | None = None,
    stride: int = 1,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Run one episode (env wrapped in RewardWrapper); the trajectory arrays and episode stats.

    The actions never depend on the reward, so the episode is scored in one call at its end
    (one round trip to the sandbox per episode, not per step).
    """
    episode = _Episode(env)
    obs, _ = env.reset(seed=seed)
    if writer is not None:
        writer.add(env.render())
    with env.deferred() as scored:
        for t in range(_limit(env, max_steps)):
            action = act(env.policy_obs(obs))
            step = env.step(action)
            done = episode.record(obs, action, step)
            obs = step[0]
            if writer is not None and (t + 1) % stride == 0:
                writer.add(env.render())
            if done:
                break
    return episode.finish(scored)


def collect_many(
    envs: list[Any],
    act: Callable[[np.ndarray], np.ndarray],
    seeds: list[int],
    max_steps: int | None,
) -> list[tuple[dict[str, np.ndarray], dict[str, Any]]]:
    """`collect` for several episodes at once, one env per seed stepped in lockstep: one batched
    policy call per step for all the episodes still running (the policy forward, not the
    physics, is most of an evaluation step). Each episode is exactly what `collect` records."""
    episodes = [_Episode(env) for env in envs]
    obs = [env.reset(seed=seed)[0] for env, seed in zip(envs, seeds, strict=True)]
    live = list(range(len(envs)))
    with contextlib.ExitStack() as stack:
        scored = [stack.enter_context(env.deferred()) for env in envs]
        for _ in range(_limit(envs[0], max_steps)):
            if not live:
                break
            actions = act(np.stack([envs[i].policy_obs(obs[i]) for i in live]))
            still = []
            for i, action in zip(live, actions, strict=True):
                step = envs[i].step(action)
                if not episodes[i].record(obs[i], action, step):
                    still.append(i)
                obs[i] = step[0]
            live = still
    return [e.finish(sc) for e, sc in zip(episodes, scored, strict=True)]
