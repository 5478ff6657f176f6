"""Where each environment keeps what the primitives read: pure data, checked against the live
models by tests/activities/behaviours/test_primitives.py (every env).

qpos layouts (MuJoCo): planar walkers (HalfCheetah, Hopper, Walker2d) have rootx, rootz, rooty
(pitch) slides then joints; free-root bodies (Ant, Humanoid, HumanoidStandup) have x, y, z and a
w-x-y-z quaternion then joints, with qvel[0:3] the world linear velocity and qvel[3:6] the body
frame angular velocity; Swimmer has x, y and heading; the pendulums a cart slider then hinges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLANAR = "planar"  # x-z plane walker: qpos = rootx, rootz, rooty, joints...
FREE = "free"  # free joint: qpos = x, y, z, qw, qx, qy, qz, joints...
SWIMMER = "swimmer"  # x-y plane: qpos = x, y, heading, joints...
FIXED = "fixed"  # no free-moving root (Reacher, pendulums)


@dataclass(frozen=True)
class Layout:
    """One environment's body, as the primitives read it."""

    root: str  # PLANAR, FREE, SWIMMER or FIXED
    # Torso height = qpos[height_index] + height_offset (HalfCheetah's rootz is relative to its
    # 0.7 m start); None where height means nothing.
    height_index: int | None = None
    height_offset: float = 0.0
    # The body axis that points up when the robot stands: HumanoidStandup is built lying on its
    # back, so its head is along the torso's -x axis.
    up_axis: str = "+z"
    stand_height: float = 0.0  # torso height standing normally (m)
    # Joint name -> qpos index (hinges only), in model order.
    joints: dict[str, int] = field(default_factory=dict)
    # Foot geoms (lowest point and floor contact come from sensors.py) and shin bodies (their
    # first joint is the knee), in the order the primitives return them.
    feet: tuple[str, ...] = ()
    knees: tuple[str, ...] = ()
    # Named body parts for the part primitives (sensors.py reads their positions): name ->
    # (kind, MuJoCo name). "foot": a foot geom, read at its lowest point; "knee": the first joint
    # of a shin body, read at its anchor; "geom": a geom's centre (head, hands).
    parts: dict[str, tuple[str, str]] = field(default_factory=dict)


def _joints(names: str, first: int) -> dict[str, int]:
    return {name: first + i for i, name in enumerate(names.split())}


def _parts(spec: str) -> dict[str, tuple[str, str]]:
    """Parts from "name:kind:mujoco_name ..." (one literal per env keeps the table readable)."""
    out = {}
    for item in spec.split():
        name, kind, mujoco_name = item.split(":")
        out[name] = (kind, mujoco_name)
    return out


_HUMANOID_PARTS = _parts(
    "head:geom:head left_hand:geom:left_hand right_hand:geom:right_hand "
    "left_foot:foot:left_foot right_foot:foot:right_foot "
    "left_knee:knee:left_shin right_knee:knee:right_shin"
)

_HUMANOID_JOINTS = _joints(
    "abdomen_z abdomen_y abdomen_x right_hip_x right_hip_z right_hip_y right_knee left_hip_x "
    "left_hip_z left_hip_y left_knee right_shoulder1 right_shoulder2 right_elbow left_shoulder1 "
    "left_shoulder2 left_elbow",
    7,
)

LAYOUTS: dict[str, Layout] = {
    "HalfCheetah-v5": Layout(
        PLANAR,
        height_index=1,
        height_offset=0.7,
        stand_height=0.7,
        joints=_joints("bthigh bshin bfoot fthigh fshin ffoot", 3),
        feet=("bfoot", "ffoot"),
        knees=("bshin", "fshin"),
        parts=_parts(
            "head:geom:head back_foot:foot:bfoot front_foot:foot:ffoot "
            "back_knee:knee:bshin front_knee:knee:fshin"
        ),
    ),
    "Hopper-v5": Layout(
        PLANAR,
        height_index=1,
        stand_height=1.25,
        joints=_joints("thigh_joint leg_joint foot_joint", 3),
        feet=("foot_geom",),
        knees=("leg",),
        parts=_parts("foot:foot:foot_geom knee:knee:leg"),
    ),
    "Walker2d-v5": Layout(
        PLANAR,
        height_index=1,
        stand_height=1.25,
        joints=_joints(
            "thigh_joint leg_joint foot_joint thigh_left_joint leg_left_joint foot_left_joint", 3
        ),
        feet=("foot_geom", "foot_left_geom"),
        knees=("leg", "leg_left"),
        # The unsuffixed leg is the right one.
        parts=_parts(
            "right_foot:foot:foot_geom left_foot:foot:foot_left_geom "
            "right_knee:knee:leg left_knee:knee:leg_left"
        ),
    ),
    "Ant-v5": Layout(
        FREE,
        height_index=2,
        stand_height=0.6,
        joints=_joints("hip_1 ankle_1 hip_2 ankle_2 hip_3 ankle_3 hip_4 ankle_4", 7),
        feet=("left_ankle_geom", "right_ankle_geom", "third_ankle_geom", "fourth_ankle_geom"),
        # The model's leg names do not say where the legs are: +x is forward, +y left.
        parts=_parts(
            "front_left_foot:foot:left_ankle_geom back_left_foot:foot:right_ankle_geom "
            "back_right_foot:foot:third_ankle_geom front_right_foot:foot:fourth_ankle_geom"
        ),
    ),
    "Humanoid-v5": Layout(
        FREE,
        height_index=2,
        stand_height=1.4,
        joints=_HUMANOID_JOINTS,
        feet=("right_foot", "left_foot"),
        knees=("right_shin", "left_shin"),
        parts=_HUMANOID_PARTS,
    ),
    "HumanoidStandup-v5": Layout(
        FREE,
        height_index=2,
        up_axis="-x",
        stand_height=1.4,
        joints=_HUMANOID_JOINTS,
        feet=("right_foot", "left_foot"),
        knees=("right_shin", "left_shin"),
        parts=_HUMANOID_PARTS,
    ),
    "Swimmer-v5": Layout(SWIMMER, joints=_joints("motor1_rot motor2_rot", 3)),
    "Reacher-v5": Layout(FIXED, joints=_joints("joint0 joint1", 0)),
    "InvertedPendulum-v5": Layout(FIXED, joints=_joints("hinge", 1)),
    "InvertedDoublePendulum-v5": Layout(FIXED, joints=_joints("hinge hinge2", 1)),
}


def layout(env_id: str) -> Layout:
    """The env's layout; ValueError naming the known envs for any other."""
    found = LAYOUTS.get(env_id)
    if found is None:
        raise ValueError(f"unknown environment {env_id!r}; known: {', '.join(LAYOUTS)}")
    return found


# What the trusted side adds to a step's info only when the reward reads it (sensors.py costs
# about a tenth of a MuJoCo step): the info keys and the primitives that read them.
SENSOR_KEYS = ("feet_z", "feet_contact", "knees_z", "parts_pos")
SENSOR_PRIMITIVES = (
    "feet_heights",
    "feet_contact",
    "knee_heights",
    "foot_height_reward",
    "knee_height_reward",
    "contact_reward",
    "part_height",
    "part_distance",
)


def reads_sensors(source: str) -> bool:
    """Whether reward code reads foot or knee readings (by key or through a primitive)."""
    return any(name in source for name in SENSOR_KEYS + SENSOR_PRIMITIVES)
