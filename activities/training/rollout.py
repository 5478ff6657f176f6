"""The deterministic evaluation rollout, its video and trajectory: run inside the child only."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import av
import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from activities.training.reward_runtime import LoadedReward
from activities.training.sim import make_env, scalar_info

MAX_VIDEO_FPS = 30


def video_stride(dt: float) -> tuple[int, int]:
    """(render every n-th step, fps) so the video plays in real time at <= MAX_VIDEO_FPS."""
    stride = max(1, math.ceil((1.0 / dt) / MAX_VIDEO_FPS))
    return stride, max(1, round(1.0 / (dt * stride)))


def evaluate(
    env_id: str,
    reward: LoadedReward,
    model_path: Path,
    vecnormalize_path: Path,
    out_dir: Path,
    seed: int,
    max_steps: int | None,
    record_video: bool,
    video_size: int = 480,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    env = make_env(env_id, reward, env_kwargs, render_size=video_size if record_video else None)
    # The raw env is stepped directly (raw obs for the trajectory); VecNormalize only normalises
    # the policy's input with the statistics frozen at the end of training.
    vecnorm = VecNormalize.load(str(vecnormalize_path), DummyVecEnv([lambda: env]))
    vecnorm.training = False
    vecnorm.norm_reward = False
    model = PPO.load(
        str(model_path),
        device="cpu",
        custom_objects={"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": 0.2},
    )
    unwrapped: Any = env.unwrapped
    dt = float(unwrapped.dt)
    limit = env.spec.max_episode_steps if env.spec and env.spec.max_episode_steps else 1000
    if max_steps is not None:
        limit = min(limit, max_steps)
    stride, fps = video_stride(dt)

    rows: dict[str, list[Any]] = defaultdict(list)
    frames: list[np.ndarray] = []
    obs, _ = env.reset(seed=seed)
    if record_video:
        frames.append(env.render())
    ret = env_ret = 0.0
    terminated = truncated = False
    info_keys: list[str] | None = None
    term_keys: list[str] | None = None
    for t in range(limit):
        action, _ = model.predict(vecnorm.normalize_obs(obs), deterministic=True)
        next_obs, rew, terminated, truncated, info = env.step(action)
        terms = info["reward_terms"]
        scalars = scalar_info(info)
        info_keys = info_keys if info_keys is not None else sorted(scalars)
        term_keys = term_keys if term_keys is not None else sorted(terms)
        rows["obs"].append(obs)
        rows["next_obs"].append(next_obs)
        rows["action"].append(np.asarray(action, dtype=np.float64))
        rows["reward"].append(float(rew))
        rows["env_reward"].append(info["env_reward"])
        rows["qpos"].append(info["qpos"])
        rows["qvel"].append(info["qvel"])
        rows["terminated"].append(bool(terminated))
        rows["truncated"].append(bool(truncated))
        for k in term_keys:
            rows[f"term_{k}"].append(terms.get(k, np.nan))
        for k in info_keys:
            rows[f"info_{k}"].append(scalars.get(k, np.nan))
        ret += float(rew)
        env_ret += info["env_reward"]
        obs = next_obs
        if record_video and (t + 1) % stride == 0:
            frames.append(env.render())
        if terminated or truncated:
            break
    env.close()

    length = len(rows["reward"])
    arrays: dict[str, np.ndarray] = {
        k: np.asarray(v, dtype=bool if k in ("terminated", "truncated") else np.float64)
        for k, v in rows.items()
    }
    arrays["meta_env_id"] = np.array(env_id)
    arrays["meta_dt"] = np.array(dt)
    traj = out_dir / "trajectories" / "eval.npz"
    traj.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(traj, **arrays)
    video = None
    if record_video and frames:
        video = out_dir / "videos" / "eval.mp4"
        write_mp4(frames, video, fps)
    return {
        "episode_return": ret,
        "env_return": env_ret,
        "episode_length": length,
        "terminated": bool(terminated),
        "trajectory": str(traj.relative_to(out_dir)),
        "video": str(video.relative_to(out_dir)) if video else None,
        "fps": fps,
        "frames": len(frames),
    }


def write_mp4(frames: list[np.ndarray], path: Path, fps: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = frames[0].shape[:2]
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height = w - w % 2, h - h % 2  # yuv420p needs even sizes
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "23", "preset": "veryfast"}
        for frame in frames:
            img = av.VideoFrame.from_ndarray(
                np.ascontiguousarray(frame[: stream.height, : stream.width]), format="rgb24"
            )
            for packet in stream.encode(img):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
