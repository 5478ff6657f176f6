"""Policies on disk without pickles: save then load gives the same policy, resume keeps the
counters, and tampered files never run code in our loaders (while SB3's own loaders would)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import pickle
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, TD3
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from activities.runner.protocol import BATCH_CHECKPOINT_FILES, CHECKPOINT_FILES, ChildRequest
from activities.runner.supervisor import run_child
from activities.training import policy_io, rollout
from activities.training.checkpoints import resume, save_policy, warm_start
from activities.training.job import TRAIN
from activities.training.offpolicy import PRESETS, _build
from activities.training.ppo import build_model
from activities.training.presets import preset_for
from tests.activities.training.rewards import RUN_FORWARD
from workflows.contracts.keys import SCALARS

ENV = "Hopper-v5"


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """As in the training child: two threads on a busy 2-core machine are many times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def hopper_envs(n: int = 1) -> DummyVecEnv:
    return DummyVecEnv([lambda: gym.make(ENV)] * n)


def ppo_build(seed: int = 0):
    preset = preset_for(ENV).fit_budget(1024)
    return preset, (lambda venv: build_model(preset, venv, seed))


def train_ppo(folder: Path) -> PPO:
    preset, build = ppo_build()
    venv = VecNormalize(hopper_envs(preset.n_envs), clip_obs=preset.clip_obs, gamma=preset.gamma)
    model = build(venv)
    model.learn(1024)
    save_policy(model, folder)
    return model


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory) -> tuple[PPO, Path]:
    folder = tmp_path_factory.mktemp("ppo")
    return train_ppo(folder), folder


def observations(n: int = 16) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 11))


def same_actions(a, b) -> bool:
    obs = observations()
    return np.array_equal(
        a.predict(obs, deterministic=True)[0], b.predict(obs, deterministic=True)[0]
    )


def test_ppo_saves_no_pickle_and_loads_the_same_policy_and_normaliser(ppo_run):
    model, folder = ppo_run
    assert sorted(p.name for p in folder.iterdir()) == ["model.zip", "vecnormalize.npz"]
    with zipfile.ZipFile(folder / "model.zip") as archive:
        meta = json.loads(archive.read("policyforge.json"))
    assert meta["algo"] == "ppo" and meta["policy_kwargs"]["activation"] in ("tanh", "relu")
    assert meta["num_timesteps"] == model.num_timesteps

    loaded = policy_io.load_model("ppo", folder / "model.zip")
    assert same_actions(model, loaded)
    assert loaded.num_timesteps == model.num_timesteps and loaded._n_updates == model._n_updates
    assert same_actions(model, rollout.load_model("ppo", folder / "model.zip"))

    venv = policy_io.load_vecnormalize(folder / "vecnormalize.npz", hopper_envs())
    saved = model.get_vec_normalize_env()
    for name in ("obs_rms", "ret_rms"):
        mine, theirs = getattr(venv, name), getattr(saved, name)
        np.testing.assert_array_equal(mine.mean, theirs.mean)
        np.testing.assert_array_equal(mine.var, theirs.var)
        assert mine.count == theirs.count
    for key in ("clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs", "norm_reward"):
        assert getattr(venv, key) == getattr(saved, key), key
    obs = observations(1)
    np.testing.assert_array_equal(venv.normalize_obs(obs), saved.normalize_obs(obs))


def test_a_resumed_ppo_keeps_its_counters_optimizer_and_trains_on(ppo_run, tmp_path):
    model, folder = ppo_run
    preset, build = ppo_build(seed=1)
    scalars = tmp_path / "scalars.jsonl"
    resumed, venv = resume(folder, hopper_envs(preset.n_envs), scalars, "ppo", build)
    assert resumed.num_timesteps == model.num_timesteps
    assert resumed._n_updates == model._n_updates and venv.training
    assert same_actions(model, resumed)
    mine = resumed.policy.optimizer.state_dict()["state"]
    theirs = model.policy.optimizer.state_dict()["state"]
    assert mine.keys() == theirs.keys()
    for k in theirs:
        torch.testing.assert_close(mine[k]["exp_avg_sq"], theirs[k]["exp_avg_sq"])
    before = resumed.num_timesteps
    resumed.learn(2048 - before, reset_num_timesteps=False)
    assert resumed.num_timesteps >= 2048 and resumed._n_updates > model._n_updates


def test_warm_start_takes_weights_and_statistics_but_not_the_counter(ppo_run):
    model, folder = ppo_run
    preset, build = ppo_build(seed=3)
    venv = VecNormalize(hopper_envs(preset.n_envs))
    fresh = build(venv)
    assert warm_start(fresh, venv, folder)
    assert same_actions(model, fresh) and fresh.num_timesteps == 0
    np.testing.assert_array_equal(venv.obs_rms.mean, model.get_vec_normalize_env().obs_rms.mean)
    # Another network (a wider net) is refused, and the policy stays fresh.
    wide = build_model(preset_for(ENV, {"net_arch": [32]}), VecNormalize(hopper_envs()), 0)
    assert not warm_start(wide, wide.get_vec_normalize_env(), folder)


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_off_policy_save_load_and_resume(tmp_path, algo):
    small = {"net_arch": (64, 64), "batch_size": 64, "buffer_size": 1000}
    preset = replace(PRESETS[algo], **small).fit_budget(1000)
    model = _build(algo, preset, VecNormalize(hopper_envs(), norm_obs=False, norm_reward=False), 0)
    model.learn(300)
    save_policy(model, tmp_path)
    loaded = rollout.load_model(algo, tmp_path / "model.zip")
    assert same_actions(model, loaded) and loaded.num_timesteps == model.num_timesteps

    resumed, venv = resume(
        tmp_path, hopper_envs(), tmp_path / "s.jsonl", algo, lambda v: _build(algo, preset, v, 1)
    )
    assert resumed.num_timesteps == model.num_timesteps and not venv.norm_obs
    assert same_actions(model, resumed) and resumed._n_updates == model._n_updates
    if algo == "sac":
        assert model.log_ent_coef.item() != 0.0  # it learned: restoring it is visible
        torch.testing.assert_close(resumed.log_ent_coef, model.log_ent_coef)
        assert resumed.ent_coef_optimizer.param_groups[0]["params"][0] is resumed.log_ent_coef
    resumed.learn(100, reset_num_timesteps=False)
    assert resumed.num_timesteps == model.num_timesteps + 100


# -- tampered files --------------------------------------------------------------------------


class Evil:
    """Unpickling it creates `canary`: what an attacker's payload would do, harmlessly."""

    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self):
        return (Path.touch, (self.canary,))


def serialized(obj) -> dict:
    return {
        ":type:": "<class 'x'>",
        ":serialized:": base64.b64encode(cloudpickle.dumps(obj)).decode(),
    }


def rewrite_zip(src: Path, dst: Path, changes: dict[str, bytes | None]) -> None:
    """A copy of `src` with members replaced (bytes) or dropped (None)."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        for item in old.infolist():
            if item.filename in changes:
                if changes[item.filename] is not None:
                    new.writestr(item.filename, changes[item.filename])
            else:
                new.writestr(item, old.read(item))
        for name, data in changes.items():
            if name not in old.namelist() and data is not None:
                new.writestr(name, data)


def tampered_data(src: Path, canary: Path) -> bytes:
    with zipfile.ZipFile(src) as archive:
        data = json.loads(archive.read("data"))
    data["policy_class"] = serialized(Evil(canary))
    data["surprise"] = serialized(Evil(canary))
    return json.dumps(data).encode()


def one_line_error(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert message and "\n" not in message, message
    return message


def test_a_zip_with_malicious_data_runs_nothing_in_our_loader_but_does_in_plain_sb3(
    ppo_run, tmp_path
):
    model, folder = ppo_run
    canary = tmp_path / "data_canary"
    bad = tmp_path / "model.zip"
    rewrite_zip(folder / "model.zip", bad, {"data": tampered_data(folder / "model.zip", canary)})

    loaded = policy_io.load_model("ppo", bad)  # the data JSON is never read: loads safely
    assert same_actions(model, loaded)
    assert not canary.exists()

    # The old loader would have run it: the test can tell the difference.
    with contextlib.suppress(Exception):
        PPO.load(bad, device="cpu")
    assert canary.exists()


def test_malicious_weights_are_refused_in_one_line_and_run_nothing(ppo_run, tmp_path):
    model, folder = ppo_run
    data_canary, pth_canary = tmp_path / "data_canary", tmp_path / "pth_canary"
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(folder / "vecnormalize.npz", run / "vecnormalize.npz")
    rewrite_zip(
        folder / "model.zip",
        run / "model.zip",
        {
            "data": tampered_data(folder / "model.zip", data_canary),
            "policy.pth": pickle.dumps(Evil(pth_canary)),
        },
    )
    preset, build = ppo_build()
    assert "weights" in one_line_error(policy_io.load_model, "ppo", run / "model.zip")
    one_line_error(rollout.load_model, "ppo", run / "model.zip")
    one_line_error(resume, run, hopper_envs(preset.n_envs), tmp_path / "s.jsonl", "ppo", build)
    venv = VecNormalize(hopper_envs(preset.n_envs))
    assert not warm_start(build(venv), venv, run)
    assert not data_canary.exists() and not pth_canary.exists()

    # An unexpected .pth member (SB3 would look it up as an attribute) is refused too.
    extra = io.BytesIO()
    torch.save({}, extra)
    rewrite_zip(folder / "model.zip", run / "extra.zip", {"env.pth": extra.getvalue()})
    assert "expected" in one_line_error(policy_io.load_model, "ppo", run / "extra.zip")


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        (None, "no policyforge.json"),
        ({"policy_kwargs": {"activation": "os.system"}}, "activation"),
        ({"policy_kwargs": {"net_arch": [-1, 64]}}, "net_arch"),
        ({"policy_kwargs": {"net_arch": [64], "features_extractor_class": "x"}}, "policy_kwargs"),
        ({"algo": "dqn"}, "unknown algorithm"),
        ({"num_timesteps": "12"}, "num_timesteps"),
        ({"counters": {"_n_updates": 1}}, "counters"),
        ({"extra": 1}, "keys"),
        (
            {
                "action_space": {
                    "shape": [3],
                    "dtype": "float32",
                    "low": ["-inf"] * 3,
                    "high": [1] * 3,
                }
            },
            "unbounded",
        ),  # fmt: skip
        (
            {
                "observation_space": {
                    "shape": [11],
                    "dtype": "object",
                    "low": [0] * 11,
                    "high": [1] * 11,
                }
            },
            "dtype",
        ),  # fmt: skip
    ],
)
def test_unexpected_settings_are_refused_in_one_line(ppo_run, tmp_path, change, expect):
    _, folder = ppo_run
    with zipfile.ZipFile(folder / "model.zip") as archive:
        meta = json.loads(archive.read("policyforge.json"))
    new = None if change is None else json.dumps({**meta, **change}).encode()
    bad = tmp_path / "model.zip"
    rewrite_zip(folder / "model.zip", bad, {"policyforge.json": new})
    assert expect in one_line_error(policy_io.load_model, "ppo", bad)
    # The loaded algorithm must match what the caller asked for.
    assert "not sac" in one_line_error(policy_io.load_model, "sac", folder / "model.zip")


def test_a_pickled_normaliser_runs_nothing_in_our_loader_but_does_in_sb3s(tmp_path):
    canary = tmp_path / "pkl_canary"
    bad = tmp_path / "vecnormalize.npz"
    bad.write_bytes(pickle.dumps(Evil(canary)))

    assert "not a policyforge normaliser" in one_line_error(
        policy_io.load_vecnormalize, bad, hopper_envs()
    )
    assert not canary.exists()

    # SB3's VecNormalize.load is pickle.load: the same file runs its payload there.
    with contextlib.suppress(Exception):
        VecNormalize.load(str(bad), hopper_envs())
    assert canary.exists()


def test_an_npz_with_an_object_array_or_odd_values_is_refused(ppo_run, tmp_path):
    _, folder = ppo_run
    canary = tmp_path / "npz_canary"
    with np.load(folder / "vecnormalize.npz") as npz:
        good = {k: npz[k] for k in npz.files}
    cases = {
        "object": {**good, "obs_rms_mean": np.array([Evil(canary)], dtype=object)},
        "shape": {**good, "obs_rms_mean": np.zeros(5)},
        "nan": {**good, "obs_rms_var": np.full(11, np.nan)},
        "extra": {**good, "surprise": np.zeros(1)},
        "missing": {k: v for k, v in good.items() if k != "gamma"},
    }
    for name, arrays in cases.items():
        path = tmp_path / f"{name}.npz"
        with open(path, "wb") as f:
            np.savez(f, **arrays)  # np.savez pickles object arrays: the attacker's way in
        one_line_error(policy_io.load_vecnormalize, path, hopper_envs())
    assert not canary.exists()
    # allow_pickle=True would have run it.
    with np.load(tmp_path / "object.npz", allow_pickle=True) as npz:
        npz["obs_rms_mean"]
    assert canary.exists()


def test_other_models_and_plain_sb3_files_are_not_mistaken_for_ours(tmp_path):
    plain = PPO("MlpPolicy", gym.make(ENV), n_steps=64, batch_size=64, device="cpu")
    plain.save(tmp_path / "plain.zip")
    assert "no policyforge.json" in one_line_error(
        policy_io.load_model, "ppo", tmp_path / "plain.zip"
    )
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    assert "not a readable zip" in one_line_error(
        policy_io.load_model, "ppo", tmp_path / "junk.zip"
    )
    # save_policy describes our own algorithms' settings only.
    odd = TD3(
        "MlpPolicy", gym.make(ENV), buffer_size=10, policy_kwargs={"activation_fn": torch.nn.ELU}
    )
    assert "activation" in one_line_error(policy_io.save_policy, odd, tmp_path / "odd")
    assert not (tmp_path / "odd" / "model.zip").exists()


async def test_a_ppo_checkpoint_resumes_through_the_child(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    train = ChildRequest(
        env_id=ENV, reward_source=RUN_FORWARD, timesteps=4096, checkpoint_every=2048
    )
    events: list[dict] = []
    await run_child(TRAIN, train, first, events.append, timeout_s=300)
    [saved] = [e for e in events if e.get("event") == "checkpoint"]
    assert saved["timesteps"] == 2048
    checkpoint = first / saved["dir"]
    # The engine's checkpoint: arrays and JSON, no pickle anywhere among the artifacts.
    assert {p.name for p in checkpoint.iterdir()} == set(BATCH_CHECKPOINT_FILES)
    assert not list(first.rglob("*.pkl")), "no pickle among the artifacts"

    again = train.model_copy(update={"resume_dir": str(checkpoint)})
    summary = await run_child(TRAIN, again, second, timeout_s=300)
    assert summary["resumed_from_timesteps"] == 2048 and summary["timesteps_done"] >= 4096
    assert policy_io.load_model("ppo", second / "model.zip").num_timesteps >= 4096
    # The metrics lines of the first attempt carry over into the resumed run's.
    steps = [json.loads(line)["timesteps"] for line in (second / SCALARS).open()]
    assert steps == [2048, 4096]


async def test_a_checkpoint_the_sb3_trainer_wrote_before_an_upgrade_still_resumes(tmp_path):
    # A run in flight across the upgrade to the engine resumes from its SB3 checkpoint (and
    # on the SB3 trainer, which can read it) instead of starting over.
    from activities.training import ppo as sb3_ppo
    from activities.training.reward_runtime import LocalRewards, load_reward
    from activities.training.run_spec import TrainJob

    old = tmp_path / "old"
    small = {"n_steps": 32}  # 512 steps an update: a checkpoint at 1,024
    job = TrainJob(
        env_id=ENV, timesteps=2048, seed=0, out_dir=old, checkpoint_every=1024, ppo_overrides=small
    )
    sb3_ppo.train(job, LocalRewards(load_reward(RUN_FORWARD, "reward_fn.py")), lambda e: None)
    checkpoint = old / "checkpoints" / "step_1024"
    assert (checkpoint / CHECKPOINT_FILES[0]).exists()
    req = ChildRequest(
        env_id=ENV,
        reward_source=RUN_FORWARD,
        timesteps=2048,
        ppo=small,
        resume_dir=str(checkpoint),
    )
    summary = await run_child(TRAIN, req, tmp_path / "new", timeout_s=300)
    assert summary["resumed_from_timesteps"] == 1024 and summary["timesteps_done"] >= 2048
