"""Each primitive against the live MuJoCo model: what it reads from qpos/qvel (and the foot and
knee sensors) must be what the simulator says about the body."""

from __future__ import annotations

import math

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import activities.behaviours.primitives as P
from activities.behaviours.layout import LAYOUTS, layout
from activities.behaviours.sensors import BodySensors
from activities.envs.catalog import ENVS
from activities.envs.quiet import quiet_mujoco

quiet_mujoco()


class Live:
    """An env at a chosen state, read as the reward sees a step (qpos, qvel, sensors)."""

    def __init__(self, env_id: str, seed: int = 0) -> None:
        self.env_id = env_id
        self.env = gym.make(env_id)
        self.env.reset(seed=seed)
        self.u = self.env.unwrapped
        self.model, self.data = self.u.model, self.u.data
        self.sensors = BodySensors(env_id, self.model)

    def set(self, qpos=None, qvel=None) -> Live:
        q = self.data.qpos.copy() if qpos is None else np.asarray(qpos, float)
        v = self.data.qvel.copy() if qvel is None else np.asarray(qvel, float)
        self.u.set_state(q, v)  # runs mj_forward: positions, orientations and contacts
        return self

    def settle(self, steps: int) -> Live:
        for _ in range(steps):
            self.env.step(np.zeros(self.env.action_space.shape))
        return self

    def info(self) -> dict:
        return {
            "qpos": self.data.qpos.copy(),
            "qvel": self.data.qvel.copy(),
            **self.sensors.read(self.data),
        }

    def torso_matrix(self) -> np.ndarray:
        return self.data.body("torso").xmat.reshape(3, 3)


def quat(axis: str, angle: float) -> np.ndarray:
    """A w-x-y-z quaternion for a rotation about a world axis."""
    q = np.zeros(4)
    q[0] = math.cos(angle / 2)
    q["xyz".index(axis) + 1] = math.sin(angle / 2)
    return q


def random_orientation(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def test_a_hopper_standing_still_has_no_speed_and_is_upright():
    live = Live("Hopper-v5")
    info = live.info()
    assert abs(P.speed("Hopper-v5", info)) < 0.02
    assert P.uprightness("Hopper-v5", info) == pytest.approx(1.0, abs=0.01)
    assert P.height("Hopper-v5", info) == pytest.approx(1.25, abs=0.01)
    assert P.still_reward("Hopper-v5", info) > 0.99
    assert P.velocity_reward("Hopper-v5", info, 2.0) < 0.01


def test_a_flipped_halfcheetah_reads_as_not_upright():
    live = Live("HalfCheetah-v5")
    qpos = live.data.qpos.copy()
    qpos[1], qpos[2] = 0.3, math.pi  # on its back
    info = live.set(qpos=qpos).info()
    assert P.uprightness("HalfCheetah-v5", info) == pytest.approx(-1.0, abs=1e-6)
    assert P.upright_reward("HalfCheetah-v5", info) == pytest.approx(0.0, abs=1e-6)
    # The torso's z axis as MuJoCo has it points down.
    assert live.torso_matrix()[2, 2] == pytest.approx(-1.0, abs=1e-6)


@pytest.mark.parametrize("env_id", ["Hopper-v5", "Walker2d-v5", "HalfCheetah-v5", "Ant-v5"])
def test_forward_velocity_is_the_envs_own_x_velocity(env_id):
    live = Live(env_id)
    rng = np.random.default_rng(1)
    for _ in range(10):
        _, _, _, _, info = live.env.step(rng.uniform(-1, 1, live.env.action_space.shape))
        step = {"qpos": live.data.qpos, "qvel": live.data.qvel, "x_velocity": info["x_velocity"]}
        assert P.forward_velocity(env_id, step) == info["x_velocity"]
    # Without the env's figure, the root's own velocity.
    qvel = live.data.qvel.copy()
    qvel[0] = 1.7
    assert P.forward_velocity(env_id, live.set(qvel=qvel).info()) == pytest.approx(1.7)


def test_lateral_velocity_speed_and_position_of_a_free_body():
    live = Live("Ant-v5")
    qpos, qvel = live.data.qpos.copy(), np.zeros(14)
    qpos[:2] = (1.5, -2.0)
    qvel[:2] = (0.3, 0.4)
    info = live.set(qpos, qvel).info()
    assert P.lateral_velocity("Ant-v5", info) == pytest.approx(0.4)
    assert P.speed("Ant-v5", info) == pytest.approx(0.5)
    assert P.position("Ant-v5", info) == pytest.approx(live.data.body("torso").xpos[:2])
    assert P.position_reward("Ant-v5", info, 1.5, -2.0, radius=0.1, margin=1.0) == 1.0
    assert P.position_reward("Ant-v5", info, 0.5, -2.0, radius=0.1, margin=0.9) == pytest.approx(
        0.1
    )
    # A planar walker cannot move sideways.
    assert P.lateral_velocity("Hopper-v5", Live("Hopper-v5").info()) == 0.0


@pytest.mark.parametrize("env_id", ["Ant-v5", "Humanoid-v5", "HumanoidStandup-v5"])
def test_orientation_of_a_free_body_matches_mujoco(env_id):
    live = Live(env_id)
    rng = np.random.default_rng(2)
    up = {"+z": (2, 2), "-x": None}[layout(env_id).up_axis]
    for _ in range(20):
        qpos = live.data.qpos.copy()
        qpos[3:7] = random_orientation(rng)
        info = live.set(qpos=qpos).info()
        r = live.torso_matrix()  # columns: the body's axes in world coordinates
        expected_up = r[2, 2] if up else -r[2, 0]
        assert P.uprightness(env_id, info) == pytest.approx(expected_up, abs=1e-9)
        assert P.pitch(env_id, info) == pytest.approx(math.asin(r[2, 0]), abs=1e-9)
        assert P.roll(env_id, info) == pytest.approx(math.asin(r[2, 1]), abs=1e-9)
        assert P.heading(env_id, info) == pytest.approx(math.atan2(r[1, 0], r[0, 0]), abs=1e-9)


def test_pitch_roll_and_heading_of_named_poses():
    live = Live("Ant-v5")
    qpos = live.data.qpos.copy()
    qpos[3:7] = quat("y", -0.5)  # nose up by 0.5 rad
    info = live.set(qpos=qpos).info()
    assert P.pitch("Ant-v5", info) == pytest.approx(0.5)
    assert P.pitch_reward("Ant-v5", info, 0.5) == 1.0
    qpos[3:7] = quat("z", 1.0)  # turned 1 rad counter-clockwise
    info = live.set(qpos=qpos).info()
    assert P.heading("Ant-v5", info) == pytest.approx(1.0)
    assert P.heading_reward("Ant-v5", info, 1.0) == 1.0
    assert P.level_reward("Ant-v5", info) == pytest.approx(1.0)
    qpos[3:7] = quat("x", math.pi / 2)  # on its side
    info = live.set(qpos=qpos).info()
    assert P.uprightness("Ant-v5", info) == pytest.approx(0.0, abs=1e-9)
    assert abs(P.roll("Ant-v5", info)) == pytest.approx(math.pi / 2, abs=1e-6)
    # A planar walker's pitch is its rooty angle, nose up when negative.
    live = Live("Walker2d-v5")
    qpos = live.data.qpos.copy()
    qpos[2] = -0.3
    info = live.set(qpos=qpos).info()
    assert P.pitch("Walker2d-v5", info) == pytest.approx(math.asin(live.torso_matrix()[2, 0]))
    assert P.pitch("Walker2d-v5", info) == pytest.approx(0.3)


@pytest.mark.parametrize("env_id", ["Ant-v5", "Humanoid-v5"])
def test_yaw_rate_is_the_world_vertical_angular_velocity(env_id):
    live = Live(env_id)
    rng = np.random.default_rng(3)
    torso = live.model.body("torso").id
    for _ in range(10):
        qpos, qvel = live.data.qpos.copy(), live.data.qvel.copy()
        qpos[3:7] = random_orientation(rng)
        qvel[3:6] = rng.normal(size=3)
        info = live.set(qpos, qvel).info()
        world = np.zeros(6)
        mujoco.mj_objectVelocity(live.model, live.data, mujoco.mjtObj.mjOBJ_BODY, torso, world, 0)
        assert P.yaw_rate(env_id, info) == pytest.approx(world[2], abs=1e-9)
    qvel = np.zeros(live.model.nv)
    qvel[5] = -0.8
    qpos = live.data.qpos.copy()
    qpos[3:7] = (1, 0, 0, 0)
    info = live.set(qpos, qvel).info()
    assert P.yaw_rate_reward(env_id, info, 0.8, direction=-1.0) == 1.0
    assert P.yaw_rate_reward(env_id, info, 0.8, direction=1.0) == 0.0


def test_swimmer_heading_and_yaw_rate():
    live = Live("Swimmer-v5")
    qpos, qvel = live.data.qpos.copy(), live.data.qvel.copy()
    qpos[2], qvel[2] = 0.7, 0.25
    info = live.set(qpos, qvel).info()
    r = live.torso_matrix()
    assert P.heading("Swimmer-v5", info) == pytest.approx(math.atan2(r[1, 0], r[0, 0]))
    assert P.yaw_rate("Swimmer-v5", info) == pytest.approx(0.25)


@pytest.mark.parametrize("env_id", sorted(LAYOUTS))
def test_joint_angles_and_speed_read_the_named_joints(env_id):
    live = Live(env_id)
    rng = np.random.default_rng(4)
    qpos = live.data.qpos + rng.normal(scale=0.05, size=live.model.nq)
    qvel = rng.normal(size=live.model.nv)
    info = live.set(qpos, qvel).info()
    names = P.joint_names(env_id)
    assert names
    angles = P.joint_angles(env_id, info)
    for i, name in enumerate(names):
        assert angles[i] == live.data.joint(name).qpos[0]
        assert P.joint_angles(env_id, info, name) == live.data.joint(name).qpos[0]
    speeds = np.array([live.data.joint(n).qvel[0] for n in names])
    assert P.joint_speed(env_id, info) == pytest.approx(math.sqrt(np.mean(speeds**2)))
    targets = {name: float(live.data.joint(name).qpos[0]) for name in names[:2]}
    assert P.joint_target_reward(env_id, info, targets) == 1.0
    with pytest.raises(ValueError, match="has no joint 'elbow_9'"):
        P.joint_angles(env_id, info, "elbow_9")


def test_still_limbs_read_as_still():
    live = Live("Walker2d-v5")
    info = live.set(qvel=np.zeros(9)).info()
    assert P.joint_speed("Walker2d-v5", info) == 0.0
    assert P.joint_still_reward("Walker2d-v5", info) == 1.0


@pytest.mark.parametrize("env_id", [e for e, lay in LAYOUTS.items() if lay.feet])
def test_feet_touch_the_floor_at_rest_and_leave_it_in_the_air(env_id):
    live = Live(env_id).settle(40)
    info = live.info()
    n = len(layout(env_id).feet)
    down = P.feet_contact(env_id, info)
    assert down.shape == (n,) and down.sum() >= 1, "some foot carries the body"
    for foot, z, touching in zip(
        layout(env_id).feet, P.feet_heights(env_id, info), down, strict=True
    ):
        assert z < 0.05 if touching else z > -0.01, (foot, z, touching)
    qpos = live.data.qpos.copy()
    qpos[layout(env_id).height_index] += 1.0  # lifted a metre: nothing touches
    info = live.set(qpos=qpos).info()
    assert P.feet_contact(env_id, info).sum() == 0
    assert np.all(P.feet_heights(env_id, info) > 0.9)
    assert P.contact_reward(env_id, info, 0.0) == 1.0
    assert P.foot_height_reward(env_id, info, 0.9, margin=0.2) == 1.0


KNEE_JOINTS = {
    "HalfCheetah-v5": ("bshin", "fshin"),
    "Hopper-v5": ("leg_joint",),
    "Walker2d-v5": ("leg_joint", "leg_left_joint"),
    "Humanoid-v5": ("right_knee", "left_knee"),
    "HumanoidStandup-v5": ("right_knee", "left_knee"),
}


@pytest.mark.parametrize("env_id", [e for e, lay in LAYOUTS.items() if lay.knees])
def test_knee_heights_are_the_knee_joints(env_id):
    live = Live(env_id)
    info = live.info()
    for i, joint in enumerate(KNEE_JOINTS[env_id]):
        assert P.knee_heights(env_id, info)[i] == pytest.approx(live.data.joint(joint).xanchor[2])
    # A standing leg's knee is about halfway between the hip and the floor.
    if env_id in ("Hopper-v5", "Walker2d-v5"):
        assert P.knee_heights(env_id, info) == pytest.approx(0.6, abs=0.05)
    if env_id == "Humanoid-v5":
        assert 0.4 < np.max(P.knee_heights(env_id, info)) < 0.7


def test_pole_angle_and_cart():
    live = Live("InvertedPendulum-v5")
    info = live.set(qpos=[0.3, 0.1]).info()
    assert P.pole_angle("InvertedPendulum-v5", info) == pytest.approx(0.1)
    assert P.cart_position("InvertedPendulum-v5", info) == pytest.approx(0.3)
    live = Live("InvertedDoublePendulum-v5")
    info = live.set(qpos=[0.0, 0.1, -0.3]).info()
    assert P.pole_angle("InvertedDoublePendulum-v5", info) == pytest.approx(0.2)
    assert P.pole_reward("InvertedDoublePendulum-v5", info, margin=0.2) == pytest.approx(0.1)
    assert P.center_reward("InvertedDoublePendulum-v5", info) == 1.0


def test_fingertip_distance_is_what_the_reacher_observes():
    live = Live("Reacher-v5", seed=5)
    rng = np.random.default_rng(5)
    for _ in range(20):
        obs, *_ = live.env.step(rng.uniform(-1, 1, 2))
        info = live.info()
        tip, target = live.data.body("fingertip").xpos, live.data.body("target").xpos
        expected = np.linalg.norm((tip - target)[:2])
        assert P.fingertip_distance("Reacher-v5", info) == pytest.approx(expected, abs=1e-5)
        assert P.fingertip_distance("Reacher-v5", info) == pytest.approx(
            np.linalg.norm(obs[8:10]), abs=1e-5
        )


def test_measures_refuse_bodies_that_lack_them():
    info = Live("Reacher-v5").info()
    for fn in (P.forward_velocity, P.height, P.uprightness, P.heading, P.feet_heights):
        with pytest.raises(ValueError, match="Reacher-v5 has no"):
            fn("Reacher-v5", info)
    with pytest.raises(ValueError, match="data has no 'qvel'"):
        P.speed("Ant-v5", {"qpos": np.zeros(15)})
    with pytest.raises(ValueError, match="unknown environment"):
        P.height("Pong-v5", info)


def test_a_trajectory_gives_one_value_per_step():
    live = Live("Hopper-v5")
    rows = []
    for _ in range(30):
        live.env.step(np.zeros(3))
        rows.append(live.info())
    traj = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
    assert P.height("Hopper-v5", traj).shape == (30,)
    assert P.height("Hopper-v5", traj)[-1] == P.height("Hopper-v5", rows[-1])
    assert P.feet_contact("Hopper-v5", traj).shape == (30, 1)
    assert P.upright_reward("Hopper-v5", traj).shape == (30,)


def test_dominant_frequency_finds_a_gait_and_not_noise():
    dt, t = 0.05, np.arange(400)
    gait = np.stack([np.sin(2 * np.pi * 1.5 * t * dt), np.cos(2 * np.pi * 1.5 * t * dt)], axis=1)
    hz, share = P.dominant_frequency(gait, dt)
    assert hz == pytest.approx(1.5, abs=0.05) and share > 0.9
    noise = np.random.default_rng(0).normal(size=(400, 2))
    assert P.dominant_frequency(noise, dt)[1] < 0.2
    assert P.dominant_frequency(np.ones((400, 2)), dt) == (0.0, 0.0)


@pytest.mark.parametrize("env_id", sorted(ENVS))
def test_every_env_has_a_layout_that_fits_its_model(env_id):
    live = Live(env_id)
    lay = layout(env_id)
    if lay.height_index is not None:
        torso_z = live.data.body("torso").xpos[2]
        assert P.height(env_id, live.info()) == pytest.approx(torso_z, abs=1e-6)
        assert abs(torso_z - lay.stand_height) < 0.1 or env_id == "HumanoidStandup-v5"
    for name, index in lay.joints.items():
        assert live.model.jnt_qposadr[live.model.joint(name).id] == index
