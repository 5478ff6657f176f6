"""Counting turns: `rotation_rate`, `rotation_step` (summed by reward code) and `total_rotation`
(judge code), checked against the live simulator's own angles for every env that can turn."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import activities.behaviours.primitives as P
from activities.behaviours.catalog import primitives_for
from activities.behaviours.layout import FREE, layout
from activities.envs.catalog import ENVS
from activities.envs.quiet import quiet_mujoco

TURNING = [e for e in sorted(ENVS) if any(i.name == "total_rotation" for i in primitives_for(e))]
# The angle each axis's rate is the derivative of, near the upright start pose.
ANGLE = {"pitch": P.pitch, "roll": P.roll, "yaw": P.heading}
# The world axes whose angle measures each turn: (body axis, world axis seen along, world
# axis the angle is measured towards), as columns / rows of the torso's rotation matrix.
PLANE = {"pitch": (0, 0, 2), "roll": (1, 1, 2), "yaw": (0, 0, 1)}
# qvel index of each axis's body-frame rate on a free root, and its sign (nose-up is about -y).
FREE_DOF = {"roll": (3, 1.0), "pitch": (4, -1.0), "yaw": (5, 1.0)}


def _env(env_id: str) -> gym.Env:
    quiet_mujoco()
    env = gym.make(env_id)
    env.reset(seed=0)
    return env


def _state(u: Any) -> dict[str, np.ndarray]:
    return {"qpos": u.data.qpos.copy(), "qvel": u.data.qvel.copy()}


def test_the_envs_that_turn():
    fixed = {"Reacher-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5"}
    assert set(TURNING) == set(ENVS) - fixed
    with pytest.raises(ValueError, match="axis must be one of"):
        P.rotation_rate("Ant-v5", {"qpos": np.zeros(15), "qvel": np.zeros(14)}, "spin")


@pytest.mark.parametrize("env_id", TURNING)
@pytest.mark.parametrize("axis", P.ROTATION_AXES)
def test_rate_is_the_derivative_of_the_angle_it_names(env_id, axis):
    """One physics step from the start pose, spinning about one axis: MuJoCo's integrator
    moves the pose by the new velocity times the timestep, so the named angle changes by
    rotation_rate * timestep (and by 0 where the body cannot turn that way)."""
    env = _env(env_id)
    u: Any = env.unwrapped  # a MujocoEnv
    q, v = u.init_qpos.copy(), np.zeros(u.model.nv)
    root = layout(env_id).root
    if root == FREE:
        q[2] += 1.0  # in the air: no contact stops the spin
        dof, sign = FREE_DOF[axis]
        v[dof] = 2.0 * sign
    else:
        v[2] = 2.0  # the root hinge: planar pitch (nose down), Swimmer's heading
    u.set_state(q, v)
    before = _state(u)
    mujoco.mj_step(u.model, u.data)
    after = _state(u)
    try:
        moved = float(P.wrap_angle(ANGLE[axis](env_id, after) - ANGLE[axis](env_id, before)))
    except ValueError:
        moved = 0.0  # Swimmer has no pitch or roll
    rate = P.rotation_rate(env_id, after, axis)
    # Swimmer's RK4 integrator moves by a weighted mean of the step's rates: within 10%.
    assert moved == pytest.approx(rate * u.model.opt.timestep, rel=0.1, abs=2e-4)
    if root == FREE:
        assert abs(rate) == pytest.approx(2.0, rel=0.05)
    env.close()


@pytest.mark.parametrize("axis", P.ROTATION_AXES)
def test_a_spin_counts_past_the_wrap(axis):
    """The Ant (symmetric: it keeps turning about one axis) spun at 2 pi rad/s for one second
    without gravity (its legs swing out or in, so it turns more or less than 2 pi): the
    trajectory's total matches the torso's unwrapped angle in the plane of the turn, well past
    pi where pitch, roll and heading wrap, and the summed steps agree with it."""
    env_id = "Ant-v5"
    env = _env(env_id)
    u: Any = env.unwrapped  # a MujocoEnv
    u.model.opt.gravity[:] = 0.0
    q, v = u.init_qpos.copy(), np.zeros(u.model.nv)
    q[2] = 5.0
    dof, sign = FREE_DOF[axis]
    v[dof] = 2.0 * np.pi * sign
    u.set_state(q, v)
    body, a, b = PLANE[axis]
    rows, summed, angles = [], 0.0, []
    for _ in range(round(1.0 / u.dt)):
        env.step(np.zeros(env.action_space.shape))
        rows.append(_state(u))
        summed += P.rotation_step(env_id, rows[-1], axis)
        column = u.data.xmat[1].reshape(3, 3)[:, body]
        angles.append(np.arctan2(column[b], column[a]))
    trajectory = {k: np.array([r[k] for r in rows]) for k in ("qpos", "qvel")}
    total = P.total_rotation(env_id, trajectory, axis)
    assert total.shape == (len(rows),) and np.all(np.diff(total) > 0)
    turned = np.unwrap(angles) - angles[0]
    assert turned[-1] > 1.4 * np.pi
    assert total - total[0] == pytest.approx(turned, abs=2e-3)
    assert summed == pytest.approx(total[-1], rel=0.02)
    assert P.rotation_step(env_id, trajectory, axis) == pytest.approx(
        [P.rotation_step(env_id, r, axis) for r in rows]
    )
    others = [a for a in P.ROTATION_AXES if a != axis]
    assert all(abs(P.total_rotation(env_id, trajectory, a)[-1]) < 0.05 for a in others)
    env.close()


def test_planar_totals_are_the_unwrapped_root_angle():
    """HalfCheetah's rooty never wraps: the total is minus its change (nose-up positive), and
    the summed rate * dt stays near it under random actions."""
    env = _env("HalfCheetah-v5")
    env.action_space.seed(0)
    u: Any = env.unwrapped  # a MujocoEnv
    rows = []
    for _ in range(300):
        env.step(env.action_space.sample())
        rows.append(_state(u))
    trajectory = {k: np.array([r[k] for r in rows]) for k in ("qpos", "qvel")}
    total = P.total_rotation("HalfCheetah-v5", trajectory, "pitch")
    exact = -(trajectory["qpos"][:, 2] - trajectory["qpos"][0, 2])
    assert total - total[0] == pytest.approx(exact, abs=1e-9)
    assert np.sum(P.rotation_step("HalfCheetah-v5", trajectory)) == pytest.approx(
        total[-1], abs=0.5
    )
    assert np.all(P.total_rotation("HalfCheetah-v5", trajectory, "yaw") == 0.0)
    env.close()
