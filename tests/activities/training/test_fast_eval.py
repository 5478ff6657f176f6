"""The evaluation's fast paths give what the slow ones gave: the direct deterministic policy call
acts as SB3's predict, episodes played in lockstep are the episodes played one by one, a video
drawn from recorded states (on two threads) shows the episode that was played, and MuJoCo's own
renderer draws the pixels the env's render() draws."""

from __future__ import annotations

from pathlib import Path

import av
import mujoco
import numpy as np
import pytest
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from activities.training.evaluation import deterministic_act
from activities.training.reward_runtime import load_reward
from activities.training.rollout import collect, collect_many
from activities.training.sim import make_env, mujoco_env
from activities.training.video import (
    Clip,
    Mp4Writer,
    StateRenderer,
    render_video,
    render_videos,
    video_stride,
)
from tests.activities.training.rewards import RUN_FORWARD

ENV = "Hopper-v5"  # ends early when it falls: lockstep episodes of different lengths


def _policy(seed: int = 0) -> tuple[PPO, VecNormalize]:
    venv = VecNormalize(DummyVecEnv([lambda: make_env(ENV, None)]))
    venv.obs_rms.mean = np.linspace(-0.5, 0.5, venv.observation_space.shape[0])
    venv.obs_rms.var = np.linspace(0.5, 2.0, venv.observation_space.shape[0])
    venv.training = False
    model = PPO("MlpPolicy", venv, seed=seed, device="cpu", policy_kwargs={"net_arch": [32, 32]})
    return model, venv


def test_the_direct_policy_call_acts_as_predict_one_by_one_and_in_a_batch():
    model, venv = _policy()
    act = deterministic_act(model, venv)
    obs = np.random.default_rng(0).normal(scale=3.0, size=(64, venv.observation_space.shape[0]))
    expected = np.stack([model.predict(venv.normalize_obs(o), deterministic=True)[0] for o in obs])
    assert np.array_equal(np.stack([act(o) for o in obs]), expected)
    assert np.allclose(act(obs), expected, atol=1e-6)
    assert np.abs(expected).max() <= 1.0  # clipped to the action space, as predict clips


def test_an_off_policy_model_still_acts_through_predict():
    env = make_env(ENV, None)
    model = SAC("MlpPolicy", env, buffer_size=10, learning_starts=0, device="cpu", seed=0)
    obs = np.random.default_rng(1).normal(size=(5, env.observation_space.shape[0]))
    act = deterministic_act(model)
    assert np.allclose(act(obs), model.predict(obs, deterministic=True)[0])


def test_episodes_in_lockstep_are_the_episodes_played_one_by_one():
    model, venv = _policy(seed=3)
    act = deterministic_act(model, venv)
    reward = load_reward(RUN_FORWARD, "reward.py")
    seeds = [0, 1, 2]
    alone = []
    for seed in seeds:
        env = make_env(ENV, reward)
        alone.append(collect(env, act, seed, 300))
        env.close()
    envs = [make_env(ENV, reward) for _ in seeds]
    together = collect_many(envs, act, seeds, 300)
    lengths = set()
    for (a, a_stats), (b, b_stats) in zip(alone, together, strict=True):
        assert a_stats == pytest.approx(b_stats)
        assert sorted(a) == sorted(b)
        for key in a:
            if key.startswith("meta_"):
                assert a[key] == b[key]
            else:
                assert np.allclose(a[key], b[key], atol=1e-6, equal_nan=True), key
        lengths.add(a_stats["episode_length"])
    assert len(lengths) > 1, "the episodes should end at different steps"


def test_a_video_drawn_from_recorded_states_shows_the_played_episode(tmp_path: Path):
    model, venv = _policy(seed=5)
    act = deterministic_act(model, venv)
    env = make_env(ENV, load_reward(RUN_FORWARD, "reward.py"), render_size=64)
    stride, fps = video_stride(float(mujoco_env(env).dt))
    played = Mp4Writer(tmp_path / "played.mp4", fps)
    arrays, _ = collect(env, act, 0, 60, played, stride=stride)
    played.close()
    env.close()
    drawn = render_video(
        ENV, 0, arrays, tmp_path / "drawn.mp4", size=64, threads=2, frames_per_renderer=1
    )
    assert drawn == played.frames == 1 + len(arrays["qpos"]) // stride

    def frames(path: Path) -> np.ndarray:
        with av.open(str(path)) as c:
            return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])

    a, b = frames(tmp_path / "played.mp4").astype(float), frames(tmp_path / "drawn.mp4")
    assert a.std() > 5  # not a blank video
    # The same scene frame by frame (in order), up to the one physics substep mj_step leaves
    # undrawn.
    assert np.abs(a - b).mean() < 2.0
    assert np.abs(a - b[::-1]).mean() > 2.0


def test_mujocos_renderer_draws_what_the_env_renders():
    env = make_env("HalfCheetah-v5", None, render_size=96)
    env.reset(seed=0)
    states = []
    for t in range(20):
        env.step(np.sin(t / 3 + np.arange(6)))
        states.append((env.unwrapped.data.qpos.copy(), env.unwrapped.data.qvel.copy()))
    sim = mujoco_env(env)
    mujoco.mj_forward(sim.model, sim.data)  # the state itself, as StateRenderer draws it
    seen = np.asarray(env.render()).copy()
    env.close()
    # Drawn after the env is gone: each renderer's GL context is current on its own.
    renderer = StateRenderer("HalfCheetah-v5", 96, seed=0)
    try:
        drawn = renderer.frame(*states[-1])
    finally:
        renderer.close()
    assert drawn.std() > 5 and np.array_equal(drawn, seen)


def test_clips_drawn_by_shared_renderers_are_the_clips_drawn_alone(tmp_path: Path):
    # Three episodes of different seeds, as an evaluation checkpoint keeps them.
    model, venv = _policy(seed=5)
    act = deterministic_act(model, venv)
    envs = [make_env(ENV, load_reward(RUN_FORWARD, "reward.py")) for _ in range(3)]
    played = collect_many(envs, act, [0, 1, 2], 200)
    for env in envs:
        env.close()
    clips = [
        Clip(seed, arrays, tmp_path / f"together_{seed}.mp4", max_frames=6 + 3 * seed)
        for seed, (arrays, _) in enumerate(played)
    ]
    # Each renderer goes from clip to clip: two of them share every clip's frames.
    written = render_videos(ENV, clips, size=64, threads=2, frames_per_renderer=1)
    assert written == [len(clip.steps()) for clip in clips] and len(set(written)) == 3

    def frames(path: Path) -> np.ndarray:
        with av.open(str(path)) as c:
            return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])

    for clip in clips:
        alone = tmp_path / f"alone_{clip.seed}.mp4"
        render_video(ENV, clip.seed, clip.arrays, alone, size=64, max_frames=clip.max_frames)
        assert np.array_equal(frames(clip.path), frames(alone))
    # Each clip starts from its own seed's reset state.
    firsts = [frames(clip.path)[0] for clip in clips]
    assert not np.array_equal(firsts[0], firsts[1])
