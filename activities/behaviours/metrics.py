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
from typing import Any

import numpy as np

import activities.behaviours.primitives as P
from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.envs.catalog import EnvFacts, facts


class TrajectoryError(ValueError):
    """The trajectory cannot be read or lacks what a metric needs."""


class MetricUnavailable(ValueError):
    """The metric does not apply to this environment or trajectory."""


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
        try:
            handle = np.load(io.BytesIO(src) if isinstance(src, bytes) else src, allow_pickle=False)
            with handle as npz:
                data = {k: np.asarray(npz[k]) for k in npz.files}
        except Exception as exc:  # noqa: BLE001 - any unreadable file is one clear error
            raise TrajectoryError(f"trajectory is not a readable .npz: {exc}") from None
        return cls.of(data, env_id)

    @classmethod
    def of(cls, data: dict[str, np.ndarray], env_id: str) -> Trajectory:
        """An env's episode from its arrays in memory; TrajectoryError when it lacks action,
        qpos or qvel, or has no step."""
        f = facts(env_id)
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


# --- per-step series: the primitives, on the whole episode ------------------------------------


def _series(fn: Callable[..., Any], t: Trajectory, *args: Any) -> np.ndarray:
    """A primitive over every step of the episode; MetricUnavailable where the env lacks it."""
    try:
        return np.asarray(fn(t.env_id, t.data, *args), dtype=np.float64)
    except ValueError as exc:
        raise MetricUnavailable(str(exc).removeprefix("primitives: ")) from None


def x_velocity(t: Trajectory) -> np.ndarray:
    """Per-step forward velocity (info's x_velocity, else the root's)."""
    return _series(P.forward_velocity, t)


def height(t: Trajectory) -> np.ndarray:
    """Per-step torso height in metres."""
    return _series(P.height, t)


def uprightness(t: Trajectory) -> np.ndarray:
    """1 upright, 0 lying, -1 upside down."""
    return _series(P.uprightness, t)


def torso_pitch_up(t: Trajectory) -> np.ndarray:
    """Elevation (rad) of the torso's forward (+x) axis above the horizontal."""
    return _series(P.pitch, t)


def yaw(t: Trajectory) -> np.ndarray:
    """Per-step heading about the vertical (rad, unwrapped)."""
    _need(layout(t.env_id).root in (FREE, SWIMMER), f"{t.env_id} cannot turn about the vertical")
    return np.unwrap(_series(P.heading, t))


def horizontal_speed(t: Trajectory) -> np.ndarray:
    """Per-step speed over the ground (the x speed for planar walkers)."""
    return _series(P.speed, t)


def pole_angle(t: Trajectory) -> np.ndarray:
    """Largest deviation (rad) of any pole link from vertical."""
    return _series(P.pole_angle, t)


def pole_up(t: Trajectory) -> np.ndarray:
    """The env's own 'still up' test: |angle| <= 0.2 rad, or the double pole's tip above 1 m."""
    q = t.qpos
    if t.env_id == "InvertedPendulum-v5":
        return np.abs(q[:, 1]) <= 0.2
    _need(t.env_id in POLE_ENVS, f"{t.env_id} has no pole")
    return 0.6 * np.cos(q[:, 1]) + 0.6 * np.cos(q[:, 1] + q[:, 2]) > 1.0


def target_distance(t: Trajectory) -> np.ndarray:
    """Reacher: per-step fingertip-to-target distance."""
    return _series(P.fingertip_distance, t)


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
    return layout(env).height_index is not None


def _roots(*kinds: str) -> Callable[[str], bool]:
    return lambda env: layout(env).root in kinds


def _has(attr: str) -> Callable[[str], bool]:
    return lambda env: bool(getattr(layout(env), attr))


def _mean(series: Callable[[Trajectory], np.ndarray]) -> Callable[[Trajectory], float]:
    return lambda t: float(np.mean(series(t)))


def _late_mean(series: Callable[[Trajectory], np.ndarray]) -> Callable[[Trajectory], float]:
    return lambda t: float(np.mean(_late(series(t))))


def distance_from_start(t: Trajectory) -> np.ndarray:
    """Per-step distance (m) over the ground from where the episode started."""
    pos = _series(P.position, t)
    return np.hypot(pos[:, 0] - pos[0, 0], pos[:, 1] - pos[0, 1])


def feet_z(t: Trajectory) -> np.ndarray:
    """(T, feet) height of each foot's lowest point."""
    return _series(P.feet_heights, t).reshape(t.length, -1)


def feet_down(t: Trajectory) -> np.ndarray:
    """(T, feet) 1 where a foot touches the floor."""
    return _series(P.feet_contact, t).reshape(t.length, -1)


def knees_z(t: Trajectory) -> np.ndarray:
    """(T, knees) height of each knee."""
    return _series(P.knee_heights, t).reshape(t.length, -1)


def gait(t: Trajectory) -> tuple[float, float]:
    """(frequency in Hz, periodicity share) of the joint angles (see P.dominant_frequency)."""
    angles = _series(P.joint_angles, t).reshape(t.length, -1)
    _need(angles.shape[1] > 0, f"{t.env_id} has no joints")
    return P.dominant_frequency(angles, t.dt)


_FREE_ROOT = _roots(FREE)
_ORIENTED = _roots(FREE, PLANAR)
_MOVES = _roots(FREE, PLANAR, SWIMMER)
_TURNS = _roots(FREE, SWIMMER)

METRICS: dict[str, Metric] = {
    "mean_x_velocity": Metric(_mean(x_velocity), "mean forward velocity", "m/s", _loco),
    "mean_backward_velocity": Metric(
        lambda t: -float(np.mean(x_velocity(t))), "mean backward velocity", "m/s", _loco
    ),
    "forward_distance": Metric(
        lambda t: float(np.sum(x_velocity(t)) * t.dt), "forward distance", "m", _loco
    ),
    "mean_abs_lateral_velocity": Metric(
        lambda t: float(np.mean(np.abs(_series(P.lateral_velocity, t)))),
        "mean sideways speed",
        "m/s",
        _MOVES,
    ),
    "mean_horizontal_speed": Metric(
        _mean(horizontal_speed), "mean horizontal speed", "m/s", _MOVES
    ),
    "late_horizontal_speed": Metric(
        _late_mean(horizontal_speed), "horizontal speed over the second half", "m/s", _MOVES
    ),
    "max_distance_from_start": Metric(
        lambda t: float(np.max(distance_from_start(t))), "farthest from the start", "m", _MOVES
    ),
    "final_distance_from_start": Metric(
        lambda t: float(distance_from_start(t)[-1]), "final distance from the start", "m", _MOVES
    ),
    "mean_height": Metric(_mean(height), "mean torso height", "m", _has_height),
    "late_mean_height": Metric(
        _late_mean(height), "torso height over the second half", "m", _has_height
    ),
    "max_height": Metric(lambda t: float(np.max(height(t))), "peak torso height", "m", _has_height),
    "alive_fraction": Metric(alive_fraction, "alive fraction", "", lambda e: True),
    "mean_uprightness": Metric(_mean(uprightness), "mean uprightness", "", _ORIENTED),
    "late_uprightness": Metric(
        _late_mean(uprightness), "uprightness over the second half", "", _ORIENTED
    ),
    "min_uprightness": Metric(
        lambda t: float(np.min(uprightness(t))), "lowest uprightness", "", _ORIENTED
    ),
    "late_torso_pitch_up": Metric(
        _late_mean(torso_pitch_up), "nose-up torso pitch over the second half", "rad", _FREE_ROOT
    ),
    "mean_abs_pitch": Metric(
        lambda t: float(np.mean(np.abs(torso_pitch_up(t)))), "mean torso pitch", "rad", _ORIENTED
    ),
    "mean_abs_roll": Metric(
        lambda t: float(np.mean(np.abs(_series(P.roll, t)))), "mean torso roll", "rad", _FREE_ROOT
    ),
    "mean_yaw_rate": Metric(mean_yaw_rate, "mean counter-clockwise yaw rate", "rad/s", _TURNS),
    "mean_clockwise_yaw_rate": Metric(
        lambda t: -mean_yaw_rate(t), "mean clockwise yaw rate", "rad/s", _TURNS
    ),
    "total_turn": Metric(
        lambda t: float(yaw(t)[-1] - yaw(t)[0]), "net counter-clockwise turn", "rad", _TURNS
    ),
    "mean_joint_speed": Metric(
        _mean(lambda t: _series(P.joint_speed, t)), "mean joint speed", "rad/s", lambda e: True
    ),
    "late_joint_speed": Metric(
        _late_mean(lambda t: _series(P.joint_speed, t)),
        "joint speed over the second half",
        "rad/s",
        lambda e: True,
    ),
    "max_foot_height": Metric(
        lambda t: float(np.max(feet_z(t))), "peak foot height", "m", _has("feet")
    ),
    "contact_fraction": Metric(
        lambda t: float(np.mean(feet_down(t))), "share of feet on the floor", "", _has("feet")
    ),
    "flight_fraction": Metric(
        lambda t: float(np.mean(feet_down(t).max(axis=1) == 0)),
        "share of steps with no foot down",
        "",
        _has("feet"),
    ),
    "max_knee_height": Metric(
        lambda t: float(np.max(knees_z(t))), "peak knee height", "m", _has("knees")
    ),
    "mean_peak_knee_height": Metric(
        lambda t: float(np.mean(knees_z(t).max(axis=1))),
        "mean height of the higher knee",
        "m",
        _has("knees"),
    ),
    "gait_frequency": Metric(lambda t: gait(t)[0], "gait frequency", "Hz", _MOVES),
    "gait_periodicity": Metric(
        lambda t: gait(t)[1], "share of joint motion at the gait frequency", "", _MOVES
    ),
    "mean_abs_pole_angle": Metric(
        _mean(pole_angle), "mean pole deviation from vertical", "rad", lambda e: e in POLE_ENVS
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
        _mean(target_distance),
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
