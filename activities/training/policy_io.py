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

The loaders here read only those two and the zip's `.pth` members (SB3 opens them with
`torch.load(weights_only=True)`); they never touch the `data` JSON, pickle or cloudpickle.
Every value is checked against an allow-list; anything else is refused with a one-line
ValueError that says what is wrong.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import PPO, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

META_NAME = "policyforge.json"
META_FORMAT = 1
ALGOS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC, "td3": TD3}
ACTIVATIONS: dict[str, type[torch.nn.Module]] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
# Policy settings each algorithm may carry, and the sub-networks a dict net_arch may name.
_POLICY_KEYS = {
    "ppo": {"net_arch", "activation", "log_std_init", "ortho_init"},
    "sac": {"net_arch", "activation", "log_std_init"},
    "td3": {"net_arch", "activation"},
}
_NET_PARTS = {"ppo": {"pi", "vf"}, "sac": {"pi", "qf"}, "td3": {"pi", "qf"}}
# Counters restored on load (resume needs them; the learning-rate schedule reads the last).
_COUNTERS = ("_n_updates", "_episode_num", "_current_progress_remaining")
_MAX_META_BYTES = 1 << 20
_BIG = 10**12

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


def describe(model: BaseAlgorithm) -> dict[str, Any]:
    """policyforge.json's content for `model`; ValueError for settings it cannot express."""
    algo = _algo_name(model)
    meta: dict[str, Any] = {
        "format": META_FORMAT,
        "algo": algo,
        "policy_kwargs": _policy_to_json(algo, model.policy_kwargs),
        "observation_space": _space_to_json(model.observation_space, "observation_space"),
        "action_space": _space_to_json(model.action_space, "action_space"),
        "num_timesteps": int(model.num_timesteps),
        "counters": {
            "_n_updates": int(model._n_updates),
            "_episode_num": int(model._episode_num),
            "_current_progress_remaining": float(model._current_progress_remaining),
        },
    }
    if isinstance(model, SAC):
        auto = model.ent_coef_optimizer is not None
        meta["ent_coef"] = "auto" if auto else float(model.ent_coef_tensor.item())
    return meta


def save_vecnormalize(venv: VecNormalize, path: Path) -> None:
    """The normaliser's statistics and settings as plain arrays (np.savez, no object arrays)."""
    if isinstance(getattr(venv, "obs_rms", None), dict):
        raise ValueError("vecnormalize: dict observation spaces are not supported")
    arrays: dict[str, np.ndarray] = {k: np.asarray(getattr(venv, k)) for k in _VECNORM_SETTINGS}
    rms = {"ret_rms": venv.ret_rms}
    if venv.norm_obs:
        rms["obs_rms"] = venv.obs_rms
    for name, stats in rms.items():
        for key in _RMS_KEYS:
            arrays[f"{name}_{key}"] = np.asarray(getattr(stats, key), dtype=np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to other names
        np.savez(f, **arrays)


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
        raise ValueError(f"{name} is not a policyforge normaliser: {_one_line(exc)}") from None
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
        _check_policy(model, meta, path)
    else:
        kwargs: dict[str, Any] = {"policy_kwargs": _policy_from_json(meta["policy_kwargs"])}
        if algo == "sac":
            kwargs["ent_coef"] = meta["ent_coef"]
            if env is None:  # SAC's "auto" target entropy reads env.action_space
                kwargs["target_entropy"] = -float(np.prod(act_space.shape))
        kwargs.update(algo_kwargs or {})
        model = ALGOS[algo]("MlpPolicy", env, device=device, _init_setup_model=False, **kwargs)
        if env is None:
            model.observation_space, model.action_space, model.n_envs = obs_space, act_space, 1
    _check_spaces(model, meta, path)
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
    if meta["algo"] != _algo_name(model):
        raise ValueError(f"{path.name} holds a {meta['algo']} model, not {_algo_name(model)}")
    _check_policy(model, meta, path)
    _check_spaces(model, meta, path)
    _load_weights(model, path, device)


def read_meta(path: str | Path) -> dict[str, Any]:
    """policyforge.json of a model.zip, checked; spaces come back as gymnasium Boxes."""
    name = Path(path).name
    try:
        with zipfile.ZipFile(path) as archive:
            try:
                info = archive.getinfo(META_NAME)
            except KeyError:
                raise ValueError(
                    f"{name} has no {META_NAME}: not saved by policyforge (plain SB3 .load "
                    "unpickles it: only for files you trust)"
                ) from None
            if info.file_size > _MAX_META_BYTES:
                raise ValueError(f"{name}: {META_NAME} is too large")
            raw = archive.read(info)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(f"{name} is not a readable zip: {_one_line(exc)}") from None
    try:
        meta = json.loads(raw.decode(), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{name}: {META_NAME} is not JSON: {_one_line(exc)}") from None
    return _check_meta(meta, name)


# -- policyforge.json ------------------------------------------------------------------------


def _check_meta(meta: Any, name: str) -> dict[str, Any]:
    def bad(what: str) -> ValueError:
        return ValueError(f"{name}: {META_NAME} {what}")

    if not isinstance(meta, dict):
        raise bad("is not an object")
    algo = meta.get("algo")
    if algo not in ALGOS:
        raise bad(f"names an unknown algorithm {str(algo)[:40]!r}")
    keys = {"format", "algo", "policy_kwargs", "observation_space", "action_space"}
    keys |= {"num_timesteps", "counters"} | ({"ent_coef"} if algo == "sac" else set())
    if set(meta) != keys:
        raise bad(f"has keys {sorted(meta)[:12]}, expected {sorted(keys)}")
    if meta["format"] != META_FORMAT:
        raise bad(f"has format {str(meta['format'])[:20]}, expected {META_FORMAT}")
    out = {"algo": algo, "policy_kwargs": _check_policy_json(algo, meta["policy_kwargs"], bad)}
    out["observation_space"] = _space_from_json(meta["observation_space"], "observation", bad)
    out["action_space"] = _space_from_json(meta["action_space"], "action", bad)
    act = out["action_space"]
    if not (np.isfinite(act.low).all() and np.isfinite(act.high).all()):
        raise bad("has an unbounded action space")
    out["num_timesteps"] = _int(meta["num_timesteps"], "num_timesteps", bad)
    counters = meta["counters"]
    if not isinstance(counters, dict) or set(counters) != set(_COUNTERS):
        raise bad(f"counters must be exactly {list(_COUNTERS)}")
    out["counters"] = {
        "_n_updates": _int(counters["_n_updates"], "_n_updates", bad),
        "_episode_num": _int(counters["_episode_num"], "_episode_num", bad),
        "_current_progress_remaining": _float(
            counters["_current_progress_remaining"], "_current_progress_remaining", bad, -_BIG, 1
        ),
    }
    if algo == "sac":
        ent = meta["ent_coef"]
        out["ent_coef"] = "auto" if ent == "auto" else _float(ent, "ent_coef", bad, 0, 1e6)
    return out


def _check_policy_json(algo: str, kwargs: Any, bad: Callable[[str], ValueError]) -> dict:
    if not isinstance(kwargs, dict) or not set(kwargs) <= _POLICY_KEYS[algo]:
        keys = sorted(kwargs) if isinstance(kwargs, dict) else kwargs
        raise bad(f"policy_kwargs {str(keys)[:120]} are not among {sorted(_POLICY_KEYS[algo])}")
    out: dict[str, Any] = {}
    if "net_arch" in kwargs:
        arch = kwargs["net_arch"]
        if isinstance(arch, dict):
            if not arch or not set(arch) <= _NET_PARTS[algo]:
                raise bad(f"net_arch parts must be among {sorted(_NET_PARTS[algo])}")
            out["net_arch"] = {k: _layers(v, bad) for k, v in arch.items()}
        else:
            out["net_arch"] = _layers(arch, bad)
    if "activation" in kwargs:
        if kwargs["activation"] not in ACTIVATIONS:
            raise bad(f"activation must be one of {sorted(ACTIVATIONS)}")
        out["activation"] = kwargs["activation"]
    if "log_std_init" in kwargs:
        out["log_std_init"] = _float(kwargs["log_std_init"], "log_std_init", bad, -20, 5)
    if "ortho_init" in kwargs:
        if not isinstance(kwargs["ortho_init"], bool):
            raise bad("ortho_init must be true or false")
        out["ortho_init"] = kwargs["ortho_init"]
    return out


def _layers(value: Any, bad: Callable[[str], ValueError]) -> list[int]:
    if not isinstance(value, list) or len(value) > 8:
        raise bad("net_arch must be a list of at most 8 layer sizes")
    return [_int(x, "a net_arch layer size", bad, 1, 4096) for x in value]


def _policy_to_json(algo: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The model's policy_kwargs as plain data; ValueError for what the allow-list lacks."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key == "use_sde" and algo == "sac" and value is False:
            continue  # SAC adds it itself; gSDE is not supported here
        if key == "activation_fn":
            names = [n for n, cls in ACTIVATIONS.items() if cls is value]
            if not names:
                raise ValueError(f"activation {value!r} is not one of {sorted(ACTIVATIONS)}")
            out["activation"] = names[0]
        elif key == "net_arch" and isinstance(value, dict):
            out[key] = {str(k): [int(x) for x in v] for k, v in value.items()}
        elif key == "net_arch":
            out[key] = [int(x) for x in value]
        elif key == "log_std_init":
            out[key] = float(value)
        elif key == "ortho_init":
            out[key] = bool(value)
        else:
            raise ValueError(f"policy setting {key!r} cannot be saved without pickle")
    if not set(out) <= _POLICY_KEYS[algo]:
        raise ValueError(f"{algo} policy settings {sorted(out)} are not all supported")
    return _check_policy_json(algo, out, ValueError)


def _policy_from_json(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in kwargs.items() if k != "activation"}
    if "activation" in kwargs:
        out["activation_fn"] = ACTIVATIONS[kwargs["activation"]]
    return out


def _check_policy(model: BaseAlgorithm, meta: dict[str, Any], path: Path) -> None:
    mine = _policy_to_json(_algo_name(model), model.policy_kwargs)
    if mine != meta["policy_kwargs"]:
        raise ValueError(f"{path.name}: saved policy {meta['policy_kwargs']} is not this {mine}")


def _check_spaces(model: BaseAlgorithm, meta: dict[str, Any], path: Path) -> None:
    for what in ("observation", "action"):
        mine, saved = getattr(model, f"{what}_space"), meta[f"{what}_space"]
        if mine != saved:
            raise ValueError(f"{path.name}: the env's {what} space {mine} is not the saved {saved}")


def _space_to_json(space: Any, what: str) -> dict[str, Any]:
    if not isinstance(space, spaces.Box):
        raise ValueError(f"{what}: only Box spaces can be saved (got {type(space).__name__})")

    def bounds(arr: np.ndarray) -> list[float | str]:
        if np.isnan(arr).any():
            raise ValueError(f"{what}: NaN bounds")
        flat = arr.astype(np.float64).ravel().tolist()
        return [float(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf") for x in flat]

    return {
        "shape": list(space.shape),
        "dtype": str(space.dtype),
        "low": bounds(space.low),
        "high": bounds(space.high),
    }


def _space_from_json(value: Any, what: str, bad: Callable[[str], ValueError]) -> spaces.Box:
    if not isinstance(value, dict) or set(value) != {"shape", "dtype", "low", "high"}:
        raise bad(f"{what}_space must have exactly shape, dtype, low, high")
    shape = value["shape"]
    if not isinstance(shape, list) or not 1 <= len(shape) <= 3:
        raise bad(f"{what}_space shape must list 1 to 3 sizes")
    dims = [_int(x, f"{what}_space size", bad, 1, 100_000) for x in shape]
    if math.prod(dims) > 1_000_000:
        raise bad(f"{what}_space is too large")
    if value["dtype"] not in ("float32", "float64"):
        raise bad(f"{what}_space dtype must be float32 or float64")
    low, high = (_bounds(value[k], math.prod(dims), what, bad) for k in ("low", "high"))
    if (low > high).any():
        raise bad(f"{what}_space has low > high")
    dtype = np.dtype(value["dtype"])
    return spaces.Box(
        low.reshape(dims).astype(dtype), high.reshape(dims).astype(dtype), dtype=dtype
    )


def _bounds(value: Any, n: int, what: str, bad: Callable[[str], ValueError]) -> np.ndarray:
    if not isinstance(value, list) or len(value) != n:
        raise bad(f"{what}_space bounds must list {n} numbers")
    inf = {"inf": math.inf, "-inf": -math.inf}
    out = []
    for x in value:
        if isinstance(x, str) and x in inf:
            out.append(inf[x])
        else:
            out.append(_float(x, f"{what}_space bound", bad, -math.inf, math.inf))
    return np.asarray(out, dtype=np.float64)


# -- weights ---------------------------------------------------------------------------------


def _load_weights(model: BaseAlgorithm, path: Path, device: str) -> dict[str, torch.Tensor]:
    """Put the zip's state dicts into `model` (SB3 reads every .pth with weights_only=True and
    `load_data=False` skips the pickled `data`); the other torch variables, checked."""
    name = path.name
    try:
        _, params, variables = load_from_zip_file(path, load_data=False, device=device)
    except Exception as exc:  # any unreadable member, e.g. a pickle weights_only refuses
        raise ValueError(f"{name}: unreadable weights: {_one_line(exc)}") from None
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
        raise ValueError(f"{name}: weights do not fit the network: {_one_line(exc)}") from None
    return variables


# -- small checks ----------------------------------------------------------------------------


def _algo_name(model: BaseAlgorithm) -> str:
    for name, cls in ALGOS.items():
        if type(model) is cls:
            return name
    raise ValueError(f"cannot save a {type(model).__name__}: only {sorted(ALGOS)}")


def _int(
    value: Any, what: str, bad: Callable[[str], ValueError], lo: int = 0, hi: int = _BIG
) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise bad(f"{what} must be an integer in [{lo}, {hi}]")
    return value


def _float(value: Any, what: str, bad: Callable[[str], ValueError], lo: float, hi: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not lo <= value <= hi:
        raise bad(f"{what} must be a finite number in [{lo}, {hi}]")
    return float(value)


def _scalar(data: Mapping[str, np.ndarray], key: str, name: str) -> float:
    arr = data[key]
    if arr.shape != () or arr.dtype.kind not in "fiub" or not np.isfinite(arr):
        raise ValueError(f"{name}: {key} must be one finite number")
    return float(arr)


def _no_constant(token: str) -> None:
    raise ValueError(f"{token} is not allowed")


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return (text[:200] + "...") if len(text) > 200 else text
