"""policyforge.json: what rebuilding a trained algorithm needs, as plain JSON, and its checks.

Written into model.zip beside Stable-Baselines3's own members by `policy_io.save_policy`: the
algorithm name, the policy's settings (net_arch, activation by name, log_std_init,
ortho_init), the spaces (shape, dtype, bounds), the timestep counter and the other counters
resume needs. Read back with `read_meta`, which checks every value against an allow-list and
refuses anything else with a one-line ValueError.
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

META_NAME = "policyforge.json"
META_FORMAT = 1
ALGOS: dict[str, type[PPO | SAC | TD3]] = {"ppo": PPO, "sac": SAC, "td3": TD3}
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


def describe(model: BaseAlgorithm) -> dict[str, Any]:
    """policyforge.json's content for `model`; ValueError for settings it cannot express."""
    algo = algo_name(model)
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
        raise ValueError(f"{name} is not a readable zip: {one_line(exc)}") from None
    try:
        meta = json.loads(raw.decode(), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{name}: {META_NAME} is not JSON: {one_line(exc)}") from None
    return _check_meta(meta, name)


# -- checks ------------------------------------------------------------------------


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


def policy_from_json(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Policy kwargs for SB3 from their JSON form (the activation by name becomes its class)."""
    out = {k: v for k, v in kwargs.items() if k != "activation"}
    if "activation" in kwargs:
        out["activation_fn"] = ACTIVATIONS[kwargs["activation"]]
    return out


def check_policy(model: BaseAlgorithm, meta: dict[str, Any], path: Path) -> None:
    """ValueError when the saved policy settings are not the model's."""
    mine = _policy_to_json(algo_name(model), model.policy_kwargs)
    if mine != meta["policy_kwargs"]:
        raise ValueError(f"{path.name}: saved policy {meta['policy_kwargs']} is not this {mine}")


def check_spaces(model: BaseAlgorithm, meta: dict[str, Any], path: Path) -> None:
    """ValueError when the saved observation or action space is not the model's."""
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


# -- small checks ----------------------------------------------------------------------------


def algo_name(model: BaseAlgorithm) -> str:
    """The model's algorithm by our name (ppo, sac, td3); ValueError for any other class."""
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


def _no_constant(token: str) -> None:
    raise ValueError(f"{token} is not allowed")


def one_line(exc: BaseException) -> str:
    """The exception's first line, at most 200 characters: for error messages built on it."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return (text[:200] + "...") if len(text) > 200 else text
