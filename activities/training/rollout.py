"""The deterministic evaluation rollout, its video and trajectory: run inside the child only."""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import mujoco
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from activities.behaviours.layout import SENSOR_KEYS
from activities.training import policy_io
from activities.training.evaluation import deterministic_act
from activities.training.reward_runtime import LoadedReward, Rewards
from activities.training.run_spec import EvalJob
from activities.training.sim import make_env, mujoco_env, scalar_info
from workflows.contracts.keys import TRAJECTORY, VIDEO

MAX_VIDEO_FPS = 30


def video_stride(dt: float) -> tuple[int, int]:
    """(render every n-th step, fps) so the video plays in real time at <= MAX_VIDEO_FPS."""
    stride = max(1, math.ceil((1.0 / dt) / MAX_VIDEO_FPS))
    return stride, max(1, round(1.0 / (dt * stride)))


def evaluate(job: EvalJob, reward: Rewards | LoadedReward) -> dict[str, Any]:
    """One deterministic episode of the trained policy under `reward`: trajectory .npz and
    (when asked) video in job.out_dir; the episode's figures."""
    out_dir = job.out_dir
    size = job.video_size if job.record_video else None
    env = make_env(job.env_id, reward, job.env_kwargs, render_size=size)
    # The raw env is stepped directly (raw obs for the trajectory); VecNormalize only normalises
    # the policy's input with the statistics frozen at the end of training.
    vecnorm = policy_io.load_vecnormalize(job.vecnormalize_path, DummyVecEnv([lambda: env]))
    vecnorm.training = False
    vecnorm.norm_reward = False
    act = deterministic_act(load_model(job.algo, job.model_path), vecnorm)
    stride, fps = video_stride(float(mujoco_env(env).dt))
    video = out_dir / VIDEO
    writer = Mp4Writer(video, fps) if job.record_video else None
    try:
        arrays, stats = collect(env, act, job.seed, job.max_steps, writer, stride)
    finally:
        env.close()
        if writer is not None:
            writer.close()
    traj = out_dir / TRAJECTORY
    traj.parent.mkdir(parents=True, exist_ok=True)
    save_trajectory(traj, arrays)
    return {
        **stats,
        "trajectory": str(traj.relative_to(out_dir)),
        "video": str(video.relative_to(out_dir)) if writer is not None else None,
        "fps": fps,
        "frames": writer.frames if writer is not None else 0,
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
            action = act(obs)
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
            actions = act(np.stack([obs[i] for i in live]))
            still = []
            for i, action in zip(live, actions, strict=True):
                step = envs[i].step(action)
                if not episodes[i].record(obs[i], action, step):
                    still.append(i)
                obs[i] = step[0]
            live = still
    return [e.finish(sc) for e, sc in zip(episodes, scored, strict=True)]


def render_states(
    env: Any, seed: int, arrays: dict[str, np.ndarray], steps: int, writer: Mp4Writer, stride: int
) -> None:
    """The video of a recorded episode, drawn from its states (qpos, qvel after each step) on a
    rendering env: the frames of re-playing it (to within the last physics substep, which
    mj_step leaves undrawn), without running the policy or the reward again."""
    env.reset(seed=seed)
    writer.add(env.render())
    sim = env.unwrapped
    for t in range(min(steps, len(arrays["qpos"]))):
        if (t + 1) % stride:
            continue
        sim.data.qpos[:] = arrays["qpos"][t]
        sim.data.qvel[:] = arrays["qvel"][t]
        mujoco.mj_forward(sim.model, sim.data)
        writer.add(env.render())


class Mp4Writer:
    """H.264 mp4 written frame by frame: a 1000-step rollout never holds all frames in memory."""

    def __init__(self, path: Path, fps: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fps = fps
        self.frames = 0
        self._container: Any = None
        self._stream: Any = None

    def add(self, frame: np.ndarray) -> None:
        """Encode one RGB frame (the first fixes the size, cropped to even sides)."""
        if self._container is None:
            h, w = frame.shape[:2]
            self._container = av.open(str(self.path), mode="w")
            self._stream = self._container.add_stream("libx264", rate=self.fps)
            self._stream.width, self._stream.height = w - w % 2, h - h % 2  # yuv420p: even
            self._stream.pix_fmt = "yuv420p"
            self._stream.options = {"crf": "23", "preset": "veryfast"}
        stream = self._stream
        img = av.VideoFrame.from_ndarray(
            np.ascontiguousarray(frame[: stream.height, : stream.width]), format="rgb24"
        )
        for packet in stream.encode(img):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        """Flush the encoder and finish the file (nothing was written without a frame)."""
        if self._container is None:
            return
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
        self._container = None
