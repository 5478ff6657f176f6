"""Behaviour metrics computed from an evaluation trajectory (.npz written by the rollout).

A trajectory holds per-step arrays: obs, next_obs, action, reward, env_reward, qpos (T, nq) and
qvel (T, nv) after each step, terminated, truncated, term_<name>, info_<key>, plus meta_env_id
and meta_dt. Criteria name a metric from `METRICS`; `available_metrics(env_id)` lists the ones an
environment supports (what an LLM eliciting criteria may choose from).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from activities.envs.catalog import EnvFacts, facts


class TrajectoryError(ValueError):
    """The trajectory cannot be read or lacks what a metric needs."""


class MetricUnavailable(ValueError):
    """The metric does not apply to this environment or trajectory."""


# How each body's root is laid out in qpos (see activities/envs/catalog.py).
FREE_ROOT = ("Ant-v5", "Humanoid-v5", "HumanoidStandup-v5")
PLANAR_WALKERS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5")
# HalfCheetah's rootz slider is relative to the torso's 0.7 m starting height; the others' are not.
HEIGHT_OFFSET = {"HalfCheetah-v5": 0.7}
# HumanoidStandup's model is built lying on its back: its head is along the torso's -x axis.
UP_AXIS = {"Ant-v5": "+z", "Humanoid-v5": "+z", "HumanoidStandup-v5": "-x"}
POLE_ENVS = ("InvertedPendulum-v5", "InvertedDoublePendulum-v5")


@dataclass
class Trajectory:
    """An evaluation episode's arrays with the env's facts (`load` reads and checks them)."""

    env_id: str
    facts: EnvFacts
    dt: float
    horizon: int  # the episode length the policy was evaluated for when it does not fall
    data: dict[str, np.ndarray]

    @classmethod
    def load(cls, src: bytes | str | Path, env_id: str) -> Trajectory:
        """The .npz (path or bytes) of an env's episode; TrajectoryError when it is unreadable
        or lacks action, qpos or qvel."""
        f = facts(env_id)
        try:
            handle = np.load(io.BytesIO(src) if isinstance(src, bytes) else src, allow_pickle=False)
            with handle as npz:
                data = {k: np.asarray(npz[k]) for k in npz.files}
        except Exception as exc:  # noqa: BLE001 - any unreadable file is one clear error
            raise TrajectoryError(f"trajectory is not a readable .npz: {exc}") from None
        for key in ("action", "qpos", "qvel"):
            if key not in data:
                raise TrajectoryError(f"trajectory has no '{key}' array (keys: {sorted(data)})")
        if len(data["action"]) == 0:
            raise TrajectoryError("trajectory is empty (0 steps)")
        dt = float(data["meta_dt"]) if "meta_dt" in data else f.dt
        horizon = int(data["meta_max_steps"]) if "meta_max_steps" in data else f.max_episode_steps
        return cls(env_id, f, dt, horizon, data)

    @property
    def length(self) -> int:
        return len(self.data["action"])

    @property
    def terminated(self) -> bool:
        term = self.data.get("terminated")
        return bool(term is not None and len(term) and term[-1])

    @property
    def qpos(self) -> np.ndarray:
        return self.data["qpos"].astype(np.float64)

    @property
    def qvel(self) -> np.ndarray:
        return self.data["qvel"].astype(np.float64)

    def info(self, key: str) -> np.ndarray | None:
        """The per-step info value `key` (info_<key>), None when the episode lacks it."""
        arr = self.data.get(f"info_{key}")
        return None if arr is None else arr.astype(np.float64)

    def terms(self) -> dict[str, np.ndarray]:
        """The session reward's per-step terms by name."""
        return {k[5:]: v.astype(np.float64) for k, v in self.data.items() if k.startswith("term_")}


def _late(series: np.ndarray) -> np.ndarray:
    """The second half of an episode: where a pose should be held, after getting there."""
    return series[len(series) // 2 :]


def _need(ok: bool, why: str) -> None:
    if not ok:
        raise MetricUnavailable(why)


# --- per-step series ------------------------------------------------------------------------


def x_velocity(t: Trajectory) -> np.ndarray:
    """Per-step forward velocity (info's, else from the root's x position)."""
    _need(t.facts.locomotion, f"{t.env_id} has no free-moving body to measure velocity of")
    v = t.info("x_velocity")
    if v is not None:
        return v
    x = t.qpos[:, 0]
    return np.diff(x) / t.dt if len(x) > 1 else np.zeros(1)


def height(t: Trajectory) -> np.ndarray:
    """Per-step torso height in metres."""
    idx = t.facts.height_index
    _need(idx is not None, f"{t.env_id} has no torso height")
    assert idx is not None
    return t.qpos[:, idx] + HEIGHT_OFFSET.get(t.env_id, 0.0)


def _quat(t: Trajectory) -> tuple[np.ndarray, ...]:
    _need(t.env_id in FREE_ROOT, f"{t.env_id} has no free-floating torso orientation")
    q = t.qpos[:, 3:7]
    return q[:, 0], q[:, 1], q[:, 2], q[:, 3]


def uprightness(t: Trajectory) -> np.ndarray:
    """1 upright, 0 lying, -1 upside down."""
    if t.env_id in PLANAR_WALKERS:
        return np.cos(t.qpos[:, 2])
    w, x, y, z = _quat(t)
    if UP_AXIS[t.env_id] == "-x":
        return 2.0 * (w * y - x * z)
    return 1.0 - 2.0 * (x * x + y * y)


def torso_pitch_up(t: Trajectory) -> np.ndarray:
    """Elevation (rad) of the torso's forward (+x) axis above the horizontal."""
    w, x, y, z = _quat(t)
    return np.arcsin(np.clip(2.0 * (x * z - w * y), -1.0, 1.0))


def yaw(t: Trajectory) -> np.ndarray:
    """Per-step heading about the vertical (rad, unwrapped)."""
    if t.env_id == "Swimmer-v5":
        return t.qpos[:, 2]
    _need(t.env_id in ("Ant-v5", "Humanoid-v5"), f"{t.env_id} cannot turn about the vertical")
    w, x, y, z = _quat(t)
    return np.unwrap(np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))


def horizontal_speed(t: Trajectory) -> np.ndarray:
    """Per-step speed over the ground (the x speed for planar walkers)."""
    if t.env_id in FREE_ROOT or t.env_id == "Swimmer-v5":
        return np.hypot(t.qvel[:, 0], t.qvel[:, 1])
    _need(t.env_id in PLANAR_WALKERS, f"{t.env_id} does not move horizontally")
    return np.abs(t.qvel[:, 0])


def pole_angle(t: Trajectory) -> np.ndarray:
    """Largest deviation (rad) of any pole link from vertical."""
    _need(t.env_id in POLE_ENVS, f"{t.env_id} has no pole")
    q = t.qpos
    if t.env_id == "InvertedPendulum-v5":
        return np.abs(q[:, 1])
    return np.maximum(np.abs(q[:, 1]), np.abs(q[:, 1] + q[:, 2]))


def pole_up(t: Trajectory) -> np.ndarray:
    """The env's own 'still up' test: |angle| <= 0.2 rad, or the double pole's tip above 1 m."""
    q = t.qpos
    if t.env_id == "InvertedPendulum-v5":
        return np.abs(q[:, 1]) <= 0.2
    _need(t.env_id in POLE_ENVS, f"{t.env_id} has no pole")
    return 0.6 * np.cos(q[:, 1]) + 0.6 * np.cos(q[:, 1] + q[:, 2]) > 1.0


def target_distance(t: Trajectory) -> np.ndarray:
    """Reacher: per-step fingertip-to-target distance."""
    _need(t.env_id == "Reacher-v5", f"{t.env_id} has no target to reach")
    nxt = t.data.get("next_obs")
    if nxt is not None:
        return np.linalg.norm(nxt[:, 8:10].astype(np.float64), axis=1)
    d = t.info("reward_dist")  # -distance x reward_dist_weight (1), measured before the step
    _need(d is not None, "trajectory has neither next_obs nor info_reward_dist")
    assert d is not None
    return -d


def _final(series: np.ndarray) -> np.ndarray:
    return series[-max(1, len(series) // 10) :]  # the last 10% of the episode


# --- metrics -------------------------------------------------------------------------------


def alive_fraction(t: Trajectory) -> float:
    """Share of the episode survived: 1.0 unless the env ended it early (a fall)."""
    return 1.0 if not t.terminated else min(1.0, t.length / max(t.horizon, 1))


def mean_yaw_rate(t: Trajectory) -> float:
    """Mean turning rate over the episode (rad/s, counter-clockwise positive)."""
    a = yaw(t)
    return float((a[-1] - a[0]) / ((len(a) - 1) * t.dt)) if len(a) > 1 else 0.0


def upright_fraction(t: Trajectory) -> float:
    """Share of the episode the pole stayed up (steps after a fall count as down)."""
    up = pole_up(t)
    return float(up.sum() / (max(t.horizon, len(up)) if t.terminated else len(up)))


@dataclass(frozen=True)
class Metric:
    """A named measure of a trajectory: how to compute it, how diagnoses name it, and which
    envs it applies to."""

    fn: Callable[[Trajectory], float]
    label: str  # for diagnoses: "<label> 0.40 m/s against a target of ..."
    unit: str
    supports: Callable[[str], bool]


def _loco(env: str) -> bool:
    return facts(env).locomotion


def _has_height(env: str) -> bool:
    return facts(env).height_index is not None


METRICS: dict[str, Metric] = {
    "mean_x_velocity": Metric(
        lambda t: float(np.mean(x_velocity(t))), "mean forward velocity", "m/s", _loco
    ),
    "mean_backward_velocity": Metric(
        lambda t: -float(np.mean(x_velocity(t))), "mean backward velocity", "m/s", _loco
    ),
    "forward_distance": Metric(
        lambda t: float(np.sum(x_velocity(t)) * t.dt), "forward distance", "m", _loco
    ),
    "mean_horizontal_speed": Metric(
        lambda t: float(np.mean(horizontal_speed(t))),
        "mean horizontal speed",
        "m/s",
        lambda e: e in FREE_ROOT or e in PLANAR_WALKERS or e == "Swimmer-v5",
    ),
    "mean_height": Metric(
        lambda t: float(np.mean(height(t))), "mean torso height", "m", _has_height
    ),
    "late_mean_height": Metric(
        lambda t: float(np.mean(_late(height(t)))),
        "torso height over the second half",
        "m",
        _has_height,
    ),
    "max_height": Metric(lambda t: float(np.max(height(t))), "peak torso height", "m", _has_height),
    "alive_fraction": Metric(alive_fraction, "alive fraction", "", lambda e: True),
    "mean_uprightness": Metric(
        lambda t: float(np.mean(uprightness(t))),
        "mean uprightness",
        "",
        lambda e: e in FREE_ROOT or e in PLANAR_WALKERS,
    ),
    "late_uprightness": Metric(
        lambda t: float(np.mean(_late(uprightness(t)))),
        "uprightness over the second half",
        "",
        lambda e: e in FREE_ROOT or e in PLANAR_WALKERS,
    ),
    "late_torso_pitch_up": Metric(
        lambda t: float(np.mean(_late(torso_pitch_up(t)))),
        "nose-up torso pitch over the second half",
        "rad",
        lambda e: e in FREE_ROOT,
    ),
    "mean_yaw_rate": Metric(
        mean_yaw_rate,
        "mean counter-clockwise yaw rate",
        "rad/s",
        lambda e: e in ("Ant-v5", "Humanoid-v5", "Swimmer-v5"),
    ),
    "mean_clockwise_yaw_rate": Metric(
        lambda t: -mean_yaw_rate(t),
        "mean clockwise yaw rate",
        "rad/s",
        lambda e: e in ("Ant-v5", "Humanoid-v5", "Swimmer-v5"),
    ),
    "mean_abs_pole_angle": Metric(
        lambda t: float(np.mean(pole_angle(t))),
        "mean pole deviation from vertical",
        "rad",
        lambda e: e in POLE_ENVS,
    ),
    "upright_fraction": Metric(
        upright_fraction, "pole-upright fraction", "", lambda e: e in POLE_ENVS
    ),
    "final_distance_to_target": Metric(
        lambda t: float(np.mean(_final(target_distance(t)))),
        "final fingertip-target distance",
        "m",
        lambda e: e == "Reacher-v5",
    ),
    "mean_distance_to_target": Metric(
        lambda t: float(np.mean(target_distance(t))),
        "mean fingertip-target distance",
        "m",
        lambda e: e == "Reacher-v5",
    ),
    "final_joint_speed": Metric(
        lambda t: float(np.mean(np.linalg.norm(_final(t.qvel[:, :2]), axis=1))),
        "final joint speed",
        "rad/s",
        lambda e: e == "Reacher-v5",
    ),
    "mean_abs_action": Metric(
        lambda t: float(np.mean(np.abs(t.data["action"]))),
        "mean action magnitude",
        "",
        lambda e: True,
    ),
}


def available_metrics(env_id: str) -> list[str]:
    """The metrics an env supports: what criteria for it may name."""
    return [name for name, m in METRICS.items() if m.supports(env_id)]


def compute(t: Trajectory, name: str) -> float:
    """The metric's value; MetricUnavailable for unknown metrics or ones the env lacks."""
    metric = METRICS.get(name)
    if metric is None:
        raise MetricUnavailable(f"unknown metric '{name}'")
    value = metric.fn(t)
    if not math.isfinite(value):
        raise MetricUnavailable(f"metric '{name}' is not finite ({value})")
    return value
