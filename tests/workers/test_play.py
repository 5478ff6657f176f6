"""`policyforge play MODEL.zip` and `policyforge.load_policy` on local files: a video that decodes,
the judge's measures, a fresh interpreter acting through the public import, and one-line
refusals for a tampered or foreign file and for a policy that needs its session's inputs."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import av
import gymnasium as gym
import numpy as np
import pytest

CLI = [sys.executable, "-m", "workers.cli"]
ENV = "HalfCheetah-v5"


def _save(folder: Path, obs_dim: int | None = None, steps: int = 256) -> Path:
    """A PPO policy with a normaliser, saved as sessions save them (trained `steps` steps on
    HalfCheetah, or untrained on a declared wider observation)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from activities.training.phase_clock import with_inputs
    from activities.training.policy_io import save_policy
    from activities.training.sim import make_env

    torch.set_num_threads(1)
    extra = 0 if obs_dim is None else obs_dim - 17
    venv = VecNormalize(DummyVecEnv([lambda: with_inputs(make_env(ENV, None), extra)]))
    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=128,
        batch_size=64,
        n_epochs=1,
        policy_kwargs={"net_arch": [32, 32]},
        device="cpu",
        seed=0,
    )
    if extra == 0:
        model.learn(steps)
    else:  # a declared env cannot be stepped: statistics that differ from the identity
        venv.obs_rms.mean[:] = 0.5
        venv.obs_rms.var[:] = 4.0
    save_policy(model, folder)
    return folder / "model.zip"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save(tmp_path_factory.mktemp("run"))


def play(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "play", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "MUJOCO_GL": "egl"},
    )


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_play_writes_a_video_that_decodes_and_prints_measures(trained: Path, tmp_path: Path):
    args = ("--env", ENV, "--episodes", "2", "--max-steps", "40", "--json")
    proc = play(str(trained), *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["env_id"] == ENV and report["algo"] == "ppo"
    assert [e["seed"] for e in report["episodes"]] == [0, 1]
    for episode in report["episodes"]:
        assert episode["length"] == 40 and not episode["terminated"]
        assert set(episode["measures"]) == {"mean_x_velocity", "mean_height"}
        assert np.isfinite(episode["return"])
    # The default --out: play.mp4 where the command ran; it says where.
    video = Path(report["video"])
    assert video == tmp_path / "play.mp4"
    assert f"video: {video}" in proc.stderr
    with av.open(str(video)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    # Each episode from its reset state, then every step (HalfCheetah plays at 20 fps).
    assert len(frames) == report["frames"] == 2 * 41
    assert frames[0].shape == (480, 480, 3) and frames[0].std() > 0

    # For people: one line per episode with the return, the length and the measures.
    out = tmp_path / "watch.mp4"
    text = play(str(trained.parent), "--env", ENV, "--max-steps", "20", "--out", str(out))
    assert text.returncode == 0, text.stderr
    assert "episode 1 (seed 0): return" in text.stdout and "20 steps" in text.stdout
    assert "mean forward velocity" in text.stdout and f"video: {out}" in text.stdout
    assert out.stat().st_size > 0


@pytest.mark.parametrize(
    "tamper", ["pickled_weights", "no_policyforge_json", "not_a_zip", "pickled_normaliser"]
)
def test_play_refuses_a_tampered_or_foreign_model_in_one_line(
    trained: Path, tmp_path: Path, tamper: str
):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):  # what unpickling would run
            return (os.system, (f"touch {marker}",))

    bad = tmp_path / "model.zip"
    if tamper == "pickled_normaliser":
        bad.write_bytes(trained.read_bytes())
        with open(tmp_path / "vecnormalize.npz", "wb") as f:
            np.savez(f, norm_obs=np.array([Payload()], dtype=object))
    elif tamper == "not_a_zip":
        bad.write_bytes(b"PK not really")
    else:
        with zipfile.ZipFile(trained) as src, zipfile.ZipFile(bad, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if tamper == "pickled_weights" and info.filename == "policy.pth":
                    data = pickle.dumps(Payload())
                if tamper == "no_policyforge_json" and info.filename == "policyforge.json":
                    continue
                dst.writestr(info, data)
    line = one_line_error(play(str(bad), "--env", ENV, "--out", str(tmp_path / "x.mp4")))
    assert ("vecnormalize.npz" if tamper == "pickled_normaliser" else "model.zip") in line
    assert line.endswith("(refused)")
    assert not marker.exists() and not (tmp_path / "x.mp4").exists()


def test_a_policy_with_phase_clock_inputs_plays_only_with_them(tmp_path: Path):
    wide = _save(tmp_path / "wide", obs_dim=18)
    line = one_line_error(play(str(wide), "--env", ENV, "--out", str(tmp_path / "x.mp4")))
    assert "takes 18 inputs, HalfCheetah-v5 gives 17" in line
    assert "phase/clock inputs" in line and "play it by session id" in line
    # Without --env no env fits exactly: it says which could, and not as a traceback.
    assert "--env" in one_line_error(play(str(wide), "--out", str(tmp_path / "x.mp4")))

    # Beside its run's summary.json (SHAPING: the clock), it plays, the clock appended.
    (wide.parent / "summary.json").write_text(json.dumps({"shaping": {"clock": True}}))
    from policyforge import load_policy

    policy = load_policy(wide, ENV)
    env = policy.make_env()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (18,) and obs[-1] == 0.0
    for step in range(1, 4):
        obs, *_ = env.step(policy.predict(obs)[0])
        assert obs[-1] == pytest.approx(step / 1000)
    env.close()
    proc = play(str(wide), "--env", ENV, "--max-steps", "5", "--out", str(tmp_path / "w.mp4"))
    assert proc.returncode == 0, proc.stderr


def test_load_policy_in_a_fresh_interpreter_runs_an_episode(trained: Path):
    script = f"""
import json
import numpy as np
from policyforge import load_policy

policy = load_policy({str(trained)!r}, {ENV!r})
env = policy.make_env()
obs, _ = env.reset(seed=0)
total, steps, done = 0.0, 0, False
while not done:
    action, state = policy.predict(obs)
    assert state is None and action.shape == env.action_space.shape
    obs, reward, terminated, truncated, _ = env.step(action)
    total, steps, done = total + reward, steps + 1, terminated or truncated
batch, _ = policy.predict(np.stack([obs, obs]))
print(json.dumps({{"steps": steps, "return": total, "algo": policy.algo, "batch": batch.shape}}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",  # the installed package, not this checkout's folder on sys.path
        env={**os.environ, "MUJOCO_GL": "egl"},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["steps"] == 1000 and np.isfinite(out["return"]) and out["algo"] == "ppo"
    assert out["batch"] == [2, 6]


def test_predict_applies_the_normaliser(trained: Path):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from activities.training.policy_io import load_model, load_vecnormalize
    from activities.training.sim import make_env
    from policyforge import load_policy

    policy = load_policy(trained)  # HalfCheetah and Walker2d share its sizes: no env guessed
    assert policy.env_id is None
    model = load_model("ppo", trained)
    vecnorm = load_vecnormalize(trained.parent / "vecnormalize.npz", DummyVecEnv([lambda: _env()]))
    obs = make_env(ENV, None).reset(seed=3)[0]
    expected = model.predict(vecnorm.normalize_obs(obs), deterministic=True)[0]
    np.testing.assert_allclose(policy.predict(obs)[0], expected, rtol=1e-5, atol=1e-6)
    raw = model.predict(obs, deterministic=True)[0]
    assert not np.allclose(raw, expected)
    with pytest.raises(ValueError, match="acts on 17 numbers"):
        policy.predict(np.zeros(5))


def _env() -> gym.Env:
    from activities.training.sim import make_env

    return make_env(ENV, None)
