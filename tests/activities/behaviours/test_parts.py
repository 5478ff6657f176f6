"""The named-part primitives against the live MuJoCo models: a part's height and the distance
between two parts are what the simulator says about those bodies, on one step's info and on a
trajectory alike."""

from __future__ import annotations

import math

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import activities.behaviours.primitives as P
from activities.behaviours.catalog import primitives_for
from activities.behaviours.layout import LAYOUTS, layout, reads_sensors
from activities.behaviours.sensors import BodySensors
from activities.envs.catalog import ENVS
from activities.envs.quiet import quiet_mujoco

quiet_mujoco()
WITH_PARTS = sorted(e for e, lay in LAYOUTS.items() if lay.parts)


def _live(env_id: str, seed: int = 0):
    env = gym.make(env_id)
    env.reset(seed=seed)
    return env, env.unwrapped.model, env.unwrapped.data, BodySensors(env_id, env.unwrapped.model)


def _info(data, sensors) -> dict:
    return {"qpos": data.qpos.copy(), "qvel": data.qvel.copy(), **sensors.read(data)}


def _expected(model, data, kind: str, name: str) -> np.ndarray:
    """Where MuJoCo has the part: a geom's centre, a foot's lowest point, a knee's anchor."""
    if kind == "knee":
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        return data.xanchor[model.body_jntadr[body]].copy()
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
    at = data.geom_xpos[geom].copy()
    if kind == "foot":
        half = (
            model.geom_size[geom][1]
            if model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_CAPSULE
            else 0
        )
        at[2] -= abs(data.geom_xmat[geom][8]) * half + model.geom_size[geom][0]
    return at


@pytest.mark.parametrize("env_id", WITH_PARTS)
def test_part_heights_and_distances_are_the_simulators(env_id: str):
    env, model, data, sensors = _live(env_id)
    rng = np.random.default_rng(0)
    parts = layout(env_id).parts
    for _ in range(5):
        env.step(rng.uniform(-1, 1, env.action_space.shape))
        info = _info(data, sensors)
        where = {p: _expected(model, data, *parts[p]) for p in parts}
        for p in parts:
            assert P.part_height(env_id, info, p) == pytest.approx(where[p][2], abs=1e-9)
        a, b = list(parts)[:2]
        apart = math.hypot(*(where[a][:2] - where[b][:2]))
        assert P.part_distance(env_id, info, a, b) == pytest.approx(apart, abs=1e-9)
        assert 0.0 <= P.part_height_reward(env_id, info, a, lower=0.5) <= 1.0
    env.close()


def test_a_humanoid_standing_has_its_head_up_and_feet_apart_at_the_hips():
    env, _, data, sensors = _live("Humanoid-v5")
    info = _info(data, sensors)
    assert P.part_height("Humanoid-v5", info, "head") == pytest.approx(1.58, abs=0.05)
    assert P.part_distance("Humanoid-v5", info, "left_foot", "right_foot") == pytest.approx(
        0.17, abs=0.03
    )
    assert 0.0 < P.part_height("Humanoid-v5", info, "left_foot") < 0.15  # it starts just up
    # Hands at rest are well below the head: "arms out" and "arms up" are both to be learnt.
    hands = [P.part_height("Humanoid-v5", info, h) for h in ("left_hand", "right_hand")]
    assert max(hands) < P.part_height("Humanoid-v5", info, "head") - 0.05
    env.close()


def test_the_ant_names_its_legs_by_where_they_are():
    env, _, data, sensors = _live("Ant-v5")
    info = _info(data, sensors)
    pos = np.asarray(info["parts_pos"]).reshape(-1, 3)
    names = P.part_names("Ant-v5")
    for name, (x, y, _) in zip(names, pos, strict=True):
        assert (x > 0) == name.startswith("front"), name
        assert (y > 0) == ("left" in name), name
    env.close()


def test_parts_on_a_trajectory_give_one_value_per_step():
    env, _, data, sensors = _live("Walker2d-v5")
    rows = []
    for _ in range(12):
        env.step(np.zeros(env.action_space.shape))
        rows.append(_info(data, sensors))
    traj = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
    heights = P.part_height("Walker2d-v5", traj, "left_knee")
    assert heights.shape == (12,) and heights[-1] == P.part_height(
        "Walker2d-v5", rows[-1], "left_knee"
    )
    apart = P.part_distance("Walker2d-v5", traj, "left_foot", "right_foot")
    assert apart.shape == (12,)
    assert P.part_distance_reward("Walker2d-v5", traj, "left_foot", "right_foot", 0.4).shape == (
        12,
    )
    env.close()


def test_parts_a_body_lacks_are_refused_by_name():
    _, _, data, sensors = _live("Walker2d-v5")
    info = _info(data, sensors)
    with pytest.raises(ValueError, match="Walker2d-v5 has no part 'left_hand'"):
        P.part_height("Walker2d-v5", info, "left_hand")
    with pytest.raises(ValueError, match="Swimmer-v5 has no named parts"):
        P.part_height("Swimmer-v5", {"qpos": np.zeros(5), "parts_pos": np.zeros(0)}, "head")
    with pytest.raises(ValueError, match="data has no 'parts_pos'"):
        P.part_height("Walker2d-v5", {"qpos": info["qpos"]}, "left_foot")


@pytest.mark.parametrize("env_id", sorted(ENVS))
def test_the_env_spec_lists_part_primitives_where_the_body_has_parts(env_id: str):
    names = {item.name for item in primitives_for(env_id)}
    has = bool(layout(env_id).parts)
    assert ({"part_height", "part_distance", "part_height_reward", "part_names"} <= names) == has
    assert ("part_distance_reward" in names) == has


def test_a_reward_reading_parts_gets_the_sensors():
    assert reads_sensors("x = P.part_height(ENV, info, 'head')")
    assert reads_sensors("x = P.part_distance_reward(ENV, info, 'left_foot', 'right_foot', 0.4)")
    assert not reads_sensors("x = P.height(ENV, info)")
