"""Gymnasium MuJoCo v5 envs stepped many at once: observation, info and termination for every
env computed with one numpy expression each, from the envs' stacked state.

Gymnasium's `env.step` spends about as long in Python (positions before and after, the
observation, the reward and info dicts, `mj_rnePostConstraint`) as MuJoCo spends on the physics
of a HalfCheetah step. A kernel keeps the physics call per env (the same `mj_step` on the env's
own model and data) and does the rest once for the whole batch. Its results equal `env.step`'s
(tests/activities/training/test_batched_envs.py checks every field); envs without a kernel, or
made with settings a kernel does not follow, are stepped through `env.step` one by one.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

# Kernels read the settings Gymnasium's v5 envs keep in private attributes (the envs have no
# public accessors); `Any` because MujocoEnv does not declare them.


@dataclass
class Stepped:
    """What a kernel returns for N envs: observations, the env's info fields as columns (one
    value or one row per env), the env's own reward, and termination."""

    obs: np.ndarray
    info: dict[str, np.ndarray]
    reward: np.ndarray
    terminated: np.ndarray


class Kernel(abc.ABC):
    """Positions before a step, then everything `env.step` returns after it, for N envs of one
    kind. `needs_cfrc` asks the stepper for `mj_rnePostConstraint` (contact forces)."""

    needs_cfrc = False

    def __init__(self, env: MujocoEnv) -> None:
        self.dt = float(env.dt)
        self.forward_w = float(getattr(env, "_forward_reward_weight", 1.0))
        self.ctrl_w = float(getattr(env, "_ctrl_cost_weight", 0.0))

    def before(self, qpos: np.ndarray, datas: Sequence[Any]) -> np.ndarray:
        return qpos[:, 0].copy()

    @abc.abstractmethod
    def after(
        self,
        qpos: np.ndarray,
        qvel: np.ndarray,
        datas: Sequence[Any],
        action: np.ndarray,
        before: np.ndarray,
    ) -> Stepped:
        """Observations, info, reward and termination after the step, from the new state."""

    def ctrl_cost(self, action: np.ndarray) -> np.ndarray:
        return self.ctrl_w * np.sum(np.square(action), axis=1)


class HalfCheetahKernel(Kernel):
    """HalfCheetah: x displacement and control cost; it never terminates."""

    def after(self, qpos, qvel, datas, action, before):  # noqa: ANN001, ANN201 - Kernel's
        x_velocity = (qpos[:, 0] - before) / self.dt
        forward = self.forward_w * x_velocity
        ctrl = self.ctrl_cost(action)
        info = {
            "x_position": qpos[:, 0].copy(),
            "x_velocity": x_velocity,
            "reward_forward": forward,
            "reward_ctrl": -ctrl,
        }
        obs = np.concatenate((qpos[:, 1:], qvel), axis=1)
        return Stepped(obs, info, forward - ctrl, np.zeros(len(qpos), dtype=bool))


class PlanarWalkerKernel(Kernel):
    """Hopper and Walker2d: healthy while height and angle (and, for Hopper, every other state
    value) stay in range; an unhealthy step ends the episode and earns no healthy reward."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.healthy_reward = float(env._healthy_reward)
        self.z_range = env._healthy_z_range
        self.angle_range = env._healthy_angle_range
        self.state_range = getattr(env, "_healthy_state_range", None)
        self.terminate = bool(env._terminate_when_unhealthy)
        self.init_z = float(env.init_qpos[1])

    def after(self, qpos, qvel, datas, action, before):  # noqa: ANN001, ANN201 - Kernel's
        z, angle = qpos[:, 1], qpos[:, 2]
        healthy = (self.z_range[0] < z) & (z < self.z_range[1])
        healthy &= (self.angle_range[0] < angle) & (angle < self.angle_range[1])
        if self.state_range is not None:
            state = np.concatenate((qpos, qvel), axis=1)[:, 2:]
            low, high = self.state_range
            healthy &= np.all((low < state) & (state < high), axis=1)
        x_velocity = (qpos[:, 0] - before) / self.dt
        forward = self.forward_w * x_velocity
        survive = healthy * self.healthy_reward
        ctrl = self.ctrl_cost(action)
        info = {
            "x_position": qpos[:, 0].copy(),
            "z_distance_from_origin": qpos[:, 1] - self.init_z,
            "x_velocity": x_velocity,
            "reward_forward": forward,
            "reward_ctrl": -ctrl,
            "reward_survive": survive,
        }
        obs = np.concatenate((qpos[:, 1:], np.clip(qvel, -10, 10)), axis=1)
        terminated = ~healthy if self.terminate else np.zeros(len(qpos), dtype=bool)
        return Stepped(obs, info, forward + survive - ctrl, terminated)


class SwimmerKernel(Kernel):
    """Swimmer: xy displacement of the front tip (qpos 0:2), control cost."""

    def before(self, qpos, datas):  # noqa: ANN001, ANN201 - Kernel's
        return qpos[:, 0:2].copy()

    def after(self, qpos, qvel, datas, action, before):  # noqa: ANN001, ANN201 - Kernel's
        xy_velocity = (qpos[:, 0:2] - before) / self.dt
        forward = self.forward_w * xy_velocity[:, 0]
        ctrl = self.ctrl_cost(action)
        info = _xy_info(qpos, xy_velocity, forward, ctrl)
        obs = np.concatenate((qpos[:, 2:], qvel), axis=1)
        return Stepped(obs, info, forward - ctrl, np.zeros(len(qpos), dtype=bool))


class AntKernel(Kernel):
    """Ant: the torso's displacement, clipped contact forces in the observation and the cost."""

    needs_cfrc = True

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.healthy_reward = float(env._healthy_reward)
        self.z_range = env._healthy_z_range
        self.terminate = bool(env._terminate_when_unhealthy)
        self.contact_w = float(env._contact_cost_weight)
        self.force_range = env._contact_force_range
        self.body = int(env._main_body)

    def before(self, qpos, datas):  # noqa: ANN001, ANN201 - Kernel's
        return np.array([d.xpos[self.body, :2] for d in datas])

    def after(self, qpos, qvel, datas, action, before):  # noqa: ANN001, ANN201 - Kernel's
        xy_velocity = (self.before(qpos, datas) - before) / self.dt
        forces = np.clip(np.array([d.cfrc_ext for d in datas]), *self.force_range)
        finite = np.isfinite(qpos).all(axis=1) & np.isfinite(qvel).all(axis=1)
        z = qpos[:, 2]
        healthy = finite & (self.z_range[0] <= z) & (z <= self.z_range[1])
        forward = xy_velocity[:, 0] * self.forward_w
        survive = healthy * self.healthy_reward
        ctrl = self.ctrl_cost(action)
        contact = self.contact_w * np.sum(np.square(forces), axis=(1, 2))
        info = _xy_info(qpos, xy_velocity, forward, ctrl)
        info.update(reward_contact=-contact, reward_survive=survive)
        obs = np.concatenate((qpos[:, 2:], qvel, forces[:, 1:].reshape(len(qpos), -1)), axis=1)
        terminated = ~healthy if self.terminate else np.zeros(len(qpos), dtype=bool)
        return Stepped(obs, info, forward + survive - ctrl - contact, terminated)


def _xy_info(
    qpos: np.ndarray, xy_velocity: np.ndarray, forward: np.ndarray, ctrl: np.ndarray
) -> dict[str, np.ndarray]:
    """The info fields Swimmer and Ant share (bodies that move in the xy plane)."""
    return {
        "x_position": qpos[:, 0].copy(),
        "y_position": qpos[:, 1].copy(),
        "distance_from_origin": np.linalg.norm(qpos[:, 0:2], ord=2, axis=1),
        "x_velocity": xy_velocity[:, 0],
        "y_velocity": xy_velocity[:, 1],
        "reward_forward": forward,
        "reward_ctrl": -ctrl,
    }


_KERNELS: dict[str, type[Kernel]] = {
    "HalfCheetah-v5": HalfCheetahKernel,
    "Hopper-v5": PlanarWalkerKernel,
    "Walker2d-v5": PlanarWalkerKernel,
    "Swimmer-v5": SwimmerKernel,
    "Ant-v5": AntKernel,
}

# Settings under which a kernel's observation layout holds; other values use env.step.
_LAYOUT_FLAGS = {
    "_exclude_current_positions_from_observation": True,
    "_include_cfrc_ext_in_observation": True,
}


def kernel_for(env_id: str, env: MujocoEnv) -> Kernel | None:
    """The env's kernel, or None when it has none or was made with settings it does not follow
    (positions kept in the observation, Ant without contact forces)."""
    kind = _KERNELS.get(env_id)
    if kind is None:
        return None
    for flag, expected in _LAYOUT_FLAGS.items():
        if getattr(env, flag, expected) != expected:
            return None
    return kind(env)
