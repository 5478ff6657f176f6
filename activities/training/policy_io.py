"""Trained policies on disk in a form that cannot carry code, and their loaders.

Stable-Baselines3's own files run code when loaded: `VecNormalize.load` is `pickle.load`, and
`PPO.load`/`SAC.load` cloudpickle-load the ":serialized:" entries of the zip's `data` JSON
(policy class, schedules, spaces, ...). A tampered artifact from S3 or a shared folder would run
in whatever process opens it. So a policy is written as:

- `model.zip`: `model.save` as usual (plain SB3 still opens it), plus a member
  `policyforge.json` holding, as plain JSON, what rebuilding the algorithm needs: the algorithm
  name, the policy's settings (net_arch, activation by name, log_std_init, ortho_init), the
  spaces (shape, dtype, bounds), the timestep counter and the other counters resume needs;
- `vecnormalize.npz` (when the model has a VecNormalize): the running statistics and settings as
  plain numeric arrays.

(`policy_meta` writes and checks policyforge.json.)

The loaders here read only those two and the zip's `.pth` members (SB3 opens them with
`torch.load(weights_only=True)`); they never touch the `data` JSON, pickle or cloudpickle.
Every value is checked against an allow-list; anything else is refused with a one-line
ValueError that says what is wrong.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from activities.training.policy_meta import (
    ALGOS,
    META_NAME,
    algo_name,
    check_policy,
    check_spaces,
    describe,
    one_line,
    policy_from_json,
    read_meta,
)

_VECNORM_SETTINGS = ("clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs", "norm_reward")
_RMS_KEYS = ("mean", "var", "count")


def save_policy(model: BaseAlgorithm, folder: Path) -> None:
    """model.zip (with policyforge.json) and, when the model has one, vecnormalize.npz: what
    evaluation, resume and warm start load, none of it a pickle."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = describe(model)  # first: a model we cannot describe leaves no half-written files
    path = folder / "model.zip"
    model.save(path)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(META_NAME, json.dumps(meta, allow_nan=False))
    venv = model.get_vec_normalize_env()
    if venv is not None:
        save_vecnormalize(venv, folder / "vecnormalize.npz")


def save_vecnormalize(venv: VecNormalize, path: Path) -> None:
    """The normaliser's statistics and settings as plain arrays (np.savez, no object arrays)."""
    obs_rms = getattr(venv, "obs_rms", None)  # absent when norm_obs is off
    if isinstance(obs_rms, dict):
        raise ValueError("vecnormalize: dict observation spaces are not supported")
    arrays: dict[str, np.ndarray] = {k: np.asarray(getattr(venv, k)) for k in _VECNORM_SETTINGS}
    rms: dict[str, Any] = {"ret_rms": venv.ret_rms}
    if venv.norm_obs:
        rms["obs_rms"] = obs_rms
    for name, stats in rms.items():
        for key in _RMS_KEYS:
            arrays[f"{name}_{key}"] = np.asarray(getattr(stats, key), dtype=np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to other names
        np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stub: a key could be allow_pickle


def load_vecnormalize(
    path: str | Path, venv: VecEnv, cls: type[VecNormalize] = VecNormalize
) -> VecNormalize:
    """A fresh VecNormalize (or the subclass `cls`) around `venv` with the statistics saved at
    `path` (training on, as VecNormalize.load leaves it). Reads with allow_pickle=False;
    refuses anything but the npz that save_vecnormalize writes."""
    name = Path(path).name
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError("not an npz archive")
        with loaded as npz:
            data = {key: npz[key] for key in npz.files}
    except Exception as exc:  # e.g. pickled data or an object array, refused by allow_pickle
        raise ValueError(f"{name} is not a policyforge normaliser: {one_line(exc)}") from None
    if "norm_obs" not in data:
        raise ValueError(f"{name} is not a policyforge normaliser: no norm_obs")
    settings = {k: _scalar(data, k, name) for k in _VECNORM_SETTINGS if k in data}
    norm_obs = bool(settings.get("norm_obs"))
    groups = ("ret_rms", "obs_rms") if norm_obs else ("ret_rms",)
    expected = set(_VECNORM_SETTINGS) | {f"{g}_{k}" for g in groups for k in _RMS_KEYS}
    if set(data) != expected:
        extra, missing = sorted(set(data) - expected), sorted(expected - set(data))
        raise ValueError(f"{name}: unexpected arrays {extra}, missing {missing}")
    for key in ("clip_obs", "clip_reward", "epsilon"):
        if not 0 < settings[key] < 1e9:
            raise ValueError(f"{name}: {key} must be positive and finite (got {settings[key]})")
    if not 0 <= settings["gamma"] <= 1:
        raise ValueError(f"{name}: gamma must be in [0, 1] (got {settings['gamma']})")
    vecnorm = cls(
        venv,
        training=True,
        norm_obs=norm_obs,
        norm_reward=bool(settings["norm_reward"]),
        clip_obs=float(settings["clip_obs"]),
        clip_reward=float(settings["clip_reward"]),
        gamma=float(settings["gamma"]),
        epsilon=float(settings["epsilon"]),
    )
    shapes = {"ret_rms": (), "obs_rms": venv.observation_space.shape}
    for group in groups:
        mean, var = data[f"{group}_mean"], data[f"{group}_var"]
        count = _scalar(data, f"{group}_count", name)
        for key, arr in (("mean", mean), ("var", var)):
            if arr.dtype.kind not in "fiu" or arr.shape != shapes[group]:
                raise ValueError(
                    f"{name}: {group}_{key} must be numbers of shape {shapes[group]} "
                    f"(got {arr.dtype} {arr.shape})"
                )
            if not np.isfinite(arr).all():
                raise ValueError(f"{name}: {group}_{key} holds non-finite values")
        if (var < 0).any() or not 0 < count < 1e15:
            raise ValueError(f"{name}: {group} has a negative variance or a bad count")
        stats = getattr(vecnorm, group)
        stats.mean = mean.astype(np.float64)
        stats.var = var.astype(np.float64)
        stats.count = float(count)
    return vecnorm


def load_model(
    algo: str,
    path: str | Path,
    env: Any = None,
    *,
    build: Callable[[Any], BaseAlgorithm] | None = None,
    algo_kwargs: Mapping[str, Any] | None = None,
    device: str = "cpu",
) -> BaseAlgorithm:
    """The model saved at `path` (by save_policy), without unpickling anything.

    The algorithm object comes from trusted settings: `build(env)` when given (resume: the run's
    own hyperparameters; its policy settings must equal the file's), otherwise the algorithm's
    defaults plus the file's policy settings and `algo_kwargs` (the caller's, e.g. a small
    replay buffer when only acting). `env` may be None: the spaces then come from the file.
    Then the weights and optimizer states (`.pth` members, weights_only), SAC's entropy
    coefficient, the timestep counter and the update counters: the model acts (evaluation) and
    trains on (resume with `learn(reset_num_timesteps=False)`) as the saved one would.
    """
    path = Path(path)
    if algo not in ALGOS:
        raise ValueError(f"algo must be one of {sorted(ALGOS)} (got {algo!r})")
    meta = read_meta(path)
    if meta["algo"] != algo:
        raise ValueError(f"{path.name} holds a {meta['algo']} model, not {algo}")
    obs_space, act_space = meta["observation_space"], meta["action_space"]
    if build is not None:
        model = build(env)
        if not isinstance(model, ALGOS[algo]):
            raise ValueError(f"build returned a {type(model).__name__}, not {algo}")
        check_policy(model, meta, path)
    else:
        kwargs: dict[str, Any] = {"policy_kwargs": policy_from_json(meta["policy_kwargs"])}
        if algo == "sac":
            kwargs["ent_coef"] = meta["ent_coef"]
            if env is None:  # SAC's "auto" target entropy reads env.action_space
                kwargs["target_entropy"] = -float(np.prod(act_space.shape))
        kwargs.update(algo_kwargs or {})
        model = ALGOS[algo]("MlpPolicy", env, device=device, _init_setup_model=False, **kwargs)
        if env is None:
            model.observation_space, model.action_space, model.n_envs = obs_space, act_space, 1
    check_spaces(model, meta, path)
    if build is None:
        model._setup_model()
    variables = _load_weights(model, path, device)
    for name, value in variables.items():
        with torch.no_grad():
            getattr(model, name).copy_(value)
    model.num_timesteps = meta["num_timesteps"]
    for name, value in meta["counters"].items():
        setattr(model, name, value)
    return model


def load_weights(model: BaseAlgorithm, path: str | Path, device: str = "cpu") -> None:
    """Only the networks and optimizer states saved at `path` into an existing `model` (warm
    start keeps its own hyperparameters and counters). ValueError when the file is not a
    policyforge model of the same algorithm and policy settings."""
    path = Path(path)
    meta = read_meta(path)
    if meta["algo"] != algo_name(model):
        raise ValueError(f"{path.name} holds a {meta['algo']} model, not {algo_name(model)}")
    check_policy(model, meta, path)
    check_spaces(model, meta, path)
    _load_weights(model, path, device)


# -- weights ---------------------------------------------------------------------------------


def _load_weights(model: BaseAlgorithm, path: Path, device: str) -> dict[str, torch.Tensor]:
    """Put the zip's state dicts into `model` (SB3 reads every .pth with weights_only=True and
    `load_data=False` skips the pickled `data`); the other torch variables, checked."""
    name = path.name
    try:
        _, params, variables = load_from_zip_file(path, load_data=False, device=device)
    except Exception as exc:  # any unreadable member, e.g. a pickle weights_only refuses
        raise ValueError(f"{name}: unreadable weights: {one_line(exc)}") from None
    expected, expected_vars = model._get_torch_save_params()
    if set(params) != set(expected):
        raise ValueError(f"{name}: weights for {sorted(params)}, expected {sorted(expected)}")
    variables = variables or {}
    if not isinstance(variables, dict) or set(variables) != set(expected_vars):
        found = sorted(variables) if isinstance(variables, dict) else type(variables).__name__
        raise ValueError(f"{name}: torch variables {found}, expected {sorted(expected_vars)}")
    for var, value in variables.items():
        current = getattr(model, var)
        if not isinstance(value, torch.Tensor) or value.shape != current.shape:
            raise ValueError(f"{name}: {var} is not a tensor of shape {tuple(current.shape)}")
        if not torch.isfinite(value).all():
            raise ValueError(f"{name}: {var} is not finite")
    try:
        model.set_parameters(params, exact_match=True, device=device)
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"{name}: weights do not fit the network: {one_line(exc)}") from None
    return variables


def _scalar(data: Mapping[str, np.ndarray], key: str, name: str) -> float:
    arr = data[key]
    if arr.shape != () or arr.dtype.kind not in "fiub" or not np.isfinite(arr):
        raise ValueError(f"{name}: {key} must be one finite number")
    return float(arr)
