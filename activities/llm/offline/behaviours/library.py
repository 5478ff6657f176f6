"""The offline author's data: templates, per-environment body geometry and parameters, criteria.

Pure data and small builders (no gymnasium): the CLI imports this to check a prompt before it
connects. Templates are files in `rendering/templates/`; this module says which environments each
supports, how reward code reads each body from `info["qpos"]` / `info["qvel"]`, the default
weights, and which measurable criteria (metrics of activities/behaviours/metrics.py) judge the
result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from activities.envs.catalog import ENVS, facts
from workflows.contracts.judging import Criterion

LOCOMOTION_ENVS = tuple(e for e, f in ENVS.items() if f.locomotion)

# Locomotion weights that differ from the env's own reward, where that reward does not teach
# walking within the default budget. Ant-v5's own control cost (0.5 on 8 actuators) outweighs
# its forward term early in training and its alive bonus (1.0) pays for standing: a session with
# them failed "walk forward" three times (0.39, 0.72, 0.47). Measured at 200k PPO steps with the
# Ant preset of the time (log_std -0.5), deterministic evaluation: forward 1.0 / ctrl 0.05 /
# alive 0.25 walked 0.15 m/s; forward 2.0 with the same 0.31 and 0.29 m/s (seeds 0, 1);
# forward 4.0 only 0.13 m/s. The preset's narrower exploration then made it reliable.
LOCOMOTION_WEIGHTS: dict[str, dict[str, float]] = {
    "Ant-v5": {"forward_weight": 2.0, "ctrl_weight": 0.05, "healthy_bonus": 0.25},
}


# Terms that pay a constant per step: a template scales them by <term>_bonus, every other term
# by <term>_weight.
_BONUS_TERMS = ("alive", "healthy")


@dataclass(frozen=True)
class TemplateSpec:
    """A reward template: which envs it fits and which terms it can emit."""

    name: str  # rendering/templates/<name>.py.tmpl
    family: str
    envs: tuple[str, ...]
    task_terms: tuple[str, ...]  # the terms that express the intent itself
    penalties: tuple[str, ...] = ()
    bonuses: tuple[str, ...] = ()  # constant per-step rewards (alive bonuses)

    @property
    def terms(self) -> tuple[str, ...]:
        """Every term the template can emit, in the order its code returns them."""
        return self.task_terms + self.penalties + self.bonuses

    def weight_param(self, term: str) -> str:
        """The parameter that scales a term: <term>_bonus for constant bonuses, else
        <term>_weight."""
        return f"{term}_bonus" if term in _BONUS_TERMS else f"{term}_weight"


_FREE_YAW_RATE = (
    # World-frame z of the root's angular velocity: MuJoCo gives a free joint's angular
    # velocity (qvel[3:6]) in the body frame, so rotate it by the third row of R(quaternion).
    "2.0 * (qpos[4] * qpos[6] - qpos[3] * qpos[5]) * qvel[3]"
    " + 2.0 * (qpos[5] * qpos[6] + qpos[3] * qpos[4]) * qvel[4]"
    " + (1.0 - 2.0 * (qpos[4] ** 2 + qpos[5] ** 2)) * qvel[5]"
)
_FREE_UP_Z = "1.0 - 2.0 * (qpos[4] ** 2 + qpos[5] ** 2)"  # world z of the body's +z axis
_PLANAR_UP = "math.cos(qpos[2])"  # planar walkers: qpos[2] is the torso pitch


@dataclass(frozen=True)
class Body:
    """How reward code reads one environment's torso (Python expressions over qpos, qvel)."""

    height: str | None
    vertical_speed: str | None
    upright: str | None  # 1 upright, 0 lying, -1 upside down
    planar_speed_sq: str  # squared horizontal speed of the root (m/s)^2
    yaw_rate: str | None  # world-frame yaw rate (rad/s); None where the root cannot turn
    stand_height: float  # torso height standing normally (m)


BODIES: dict[str, Body] = {
    "Hopper-v5": Body("qpos[1]", "qvel[1]", _PLANAR_UP, "qvel[0] ** 2", None, 1.25),
    "Walker2d-v5": Body("qpos[1]", "qvel[1]", _PLANAR_UP, "qvel[0] ** 2", None, 1.25),
    "Ant-v5": Body(
        "qpos[2]", "qvel[2]", _FREE_UP_Z, "qvel[0] ** 2 + qvel[1] ** 2", _FREE_YAW_RATE, 0.6
    ),
    "Humanoid-v5": Body(
        "qpos[2]", "qvel[2]", _FREE_UP_Z, "qvel[0] ** 2 + qvel[1] ** 2", _FREE_YAW_RATE, 1.4
    ),
    # HumanoidStandup's model is built lying on its back: the head is along the torso's -x axis.
    "HumanoidStandup-v5": Body(
        "qpos[2]",
        "qvel[2]",
        "2.0 * (qpos[3] * qpos[5] - qpos[4] * qpos[6])",
        "qvel[0] ** 2 + qvel[1] ** 2",
        None,
        1.4,
    ),
    # Swimmer moves in the x-y plane; qpos[2] is its heading.
    "Swimmer-v5": Body(None, None, None, "qvel[0] ** 2 + qvel[1] ** 2", "qvel[2]", 0.0),
}

# Squared deviation of the pole(s) from vertical, and the angle metric the judge reports.
POLE_ANGLE_SQ = {
    "InvertedPendulum-v5": "qpos[1] ** 2",
    "InvertedDoublePendulum-v5": "qpos[1] ** 2 + (qpos[1] + qpos[2]) ** 2",
}

_LOCO = dict(penalties=("ctrl",), bonuses=("healthy",))
_STANDING = dict(penalties=("still", "ctrl"), bonuses=("healthy",))
SPECS: dict[str, TemplateSpec] = {
    s.name: s
    for s in (
        TemplateSpec("forward", "locomotion", LOCOMOTION_ENVS, ("forward",), **_LOCO),
        TemplateSpec("track_speed", "locomotion", LOCOMOTION_ENVS, ("speed",), **_LOCO),
        TemplateSpec(
            "stand",
            "standing",
            ("Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5", "HumanoidStandup-v5"),
            ("height", "upright"),
            **_STANDING,
        ),
        TemplateSpec(
            "hold_height",
            "standing",
            ("Hopper-v5", "Walker2d-v5", "Humanoid-v5", "HumanoidStandup-v5"),
            ("height", "upright"),
            **_STANDING,
        ),
        TemplateSpec(
            "spin",
            "spinning",
            ("Ant-v5", "Humanoid-v5", "Swimmer-v5"),
            ("spin",),
            ("drift", "ctrl"),
            ("healthy",),
        ),
        TemplateSpec(
            "jump",
            "jumping",
            ("Hopper-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5"),
            ("height", "rise"),
            ("ctrl",),
            ("healthy",),
        ),
        # Staying alive is the task itself here, not a bonus beside it.
        TemplateSpec(
            "balance",
            "balancing",
            ("InvertedPendulum-v5", "InvertedDoublePendulum-v5"),
            ("alive",),
            ("angle", "center"),
        ),
        TemplateSpec(
            "rear_up", "balancing", ("Ant-v5",), ("pitch",), ("drift", "ctrl"), ("healthy",)
        ),
        TemplateSpec("reach", "reaching", ("Reacher-v5",), ("distance",), ("ctrl", "still")),
    )
}

# Heights (m) of the torso for poses; Humanoid-v5 ends an episode below 1.0 m and Walker2d-v5
# above 2.0 m, so targets stay inside each env's healthy range.
SQUAT_HEIGHT = {
    "Humanoid-v5": 1.1,
    "HumanoidStandup-v5": 0.85,
    "Hopper-v5": 0.95,
    "Walker2d-v5": 0.95,
}
SIT_HEIGHT = {"HumanoidStandup-v5": 0.45}  # pelvis on the ground, torso upright

# Measured on Ant-v5 by a search over held joint targets (PD control, 3 s of physics): its
# joint ranges hold a nose-up pitch of at most 0.33 rad with the torso off the floor (the pose
# PPO finds under the rear_up reward, one front foot lifted) and 0.67 rad with the torso
# resting on it; no held pose kept both front (+x) feet off the floor.
REAR_UP_NOTE = (
    "Ant-v5's joint ranges hold a nose-up torso pitch of about 0.33 rad with the torso off the "
    "floor and 0.67 rad with it resting on the floor (measured); both front feet off the floor "
    "was not a held pose, so a pitch target of 0.8 rad may be beyond this body"
)
JUMP_TARGET = {"Hopper-v5": 1.7, "Walker2d-v5": 1.6, "Ant-v5": 0.95, "Humanoid-v5": 1.6}
# Rough yaw rates (rad/s) a PPO policy reaches within a few hundred thousand steps.
SPIN_RATE = {"Ant-v5": 1.5, "Humanoid-v5": 0.5, "Swimmer-v5": 0.5}
# Envs that can flip over without the episode ending: an 'upright' criterion catches that exploit.
FLIPPABLE = ("HalfCheetah-v5", "Ant-v5")


def base_params(env_id: str) -> dict[str, float]:
    """Control weight and alive bonus as the env itself uses them."""
    f = facts(env_id)
    return {
        "ctrl_weight": f.ctrl_cost_weight,
        "healthy_bonus": f.healthy_reward if f.terminates else 0.0,
    }


# --- criteria ------------------------------------------------------------------------------


def crit(
    name: str,
    description: str,
    metric: str,
    target: float,
    direction: Literal["at_least", "at_most", "near"] = "at_least",
    tolerance: float = 0.0,
    weight: float = 1.0,
    maximise: bool = False,
) -> Criterion:
    """A Criterion with its target and tolerance rounded, as the templates declare them, in
    its library metric's unit (so that every verdict reads '3.95 m/s', not '3.95')."""
    from activities.behaviours.metrics import METRICS

    return Criterion(
        unit=METRICS[metric].unit if metric in METRICS else "",
        maximise=maximise,
        name=name,
        description=description,
        metric=metric,
        target=round(target, 4),
        direction=direction,
        tolerance=round(tolerance, 4),
        weight=weight,
    )


def alive_criteria(env_id: str) -> list[Criterion]:
    """Not falling, for envs that end the episode when the body falls (none otherwise)."""
    if not facts(env_id).terminates:
        return []
    return [
        crit(
            "stays_healthy",
            "does not fall: survives at least 90% of the episode",
            "alive_fraction",
            0.9,
        )
    ]


def upright_criteria(env_id: str) -> list[Criterion]:
    """Staying upright, for bodies that can flip over (none otherwise)."""
    if env_id not in FLIPPABLE:
        return []
    return [
        crit(
            "stays_upright",
            "keeps its torso upright instead of flipping over",
            "mean_uprightness",
            0.7,
        )
    ]


def stated_speed_tolerance(target: float) -> float:
    """How far the judged mean speed may sit from a speed the person stated ("at 2.5 m/s"):
    8 %, so that a pass (the speed's weight with the rest met) stays within about 12 % of it."""
    return round(max(0.08 * target, 0.05), 4)


def locomotion_criteria(
    env_id: str,
    direction: float,
    target: float,
    exact: bool,
    stated: bool = False,
    maximise: bool = False,
) -> list[Criterion]:
    """The speed criterion for moving forward or backward (at least, or near an exact target:
    a stated number closely, a word like "steady" loosely; `maximise` for "as fast as
    possible"), with staying healthy and upright."""
    word = "forward" if direction > 0 else "backward"
    metric = "mean_x_velocity" if direction > 0 else "mean_backward_velocity"
    if exact:
        tol = stated_speed_tolerance(target) if stated else max(0.25 * target, 0.1)
        speed = crit(
            f"{word}_speed",
            f"mean {word} velocity {target:g} m/s (within {tol:g} m/s)",
            metric,
            target,
            "near",
            tol,
            weight=3.0,
        )
    else:
        speed = crit(
            f"{word}_speed",
            f"mean {word} velocity at least {target:g} m/s"
            + (", as fast as it gets" if maximise else ""),
            metric,
            target,
            weight=3.0,
            maximise=maximise,
        )
    return [speed, *alive_criteria(env_id), *upright_criteria(env_id)]


def balance_criteria(double: bool, held: float = 0.95) -> list[Criterion]:
    """The pendulums' criteria, shared by their template and the composer: the pole stays up
    for `held` of the episode and close to vertical on average."""
    limit = 0.1 if double else 0.05
    return [
        crit(
            "keeps_balance",
            f"pole stays up for at least {held:.0%} of the episode",
            "alive_fraction",
            held,
            weight=2.0,
        ),
        crit(
            "pole_vertical",
            f"mean pole deviation from vertical at most {limit:g} rad",
            "mean_abs_pole_angle",
            limit,
            "at_most",
        ),
    ]


def reaches_target() -> Criterion:
    """Reacher's end criterion, shared by its template and the composer."""
    return crit(
        "reaches_target",
        "fingertip within 0.02 m of the target at the end",
        "final_distance_to_target",
        0.02,
        "at_most",
        weight=2.0,
    )
