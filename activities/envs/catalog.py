"""Catalog of the 10 Gymnasium MuJoCo v5 environments: the facts authors and judges rely on.

Pure data (no gymnasium import) so the LLM and judge pools can read it cheaply;
tests/activities/envs/test_catalog.py checks every entry against the live environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EnvFacts:
    """What the project relies on about one env, written down (no gymnasium import needed):
    sizes, timing, termination and where the torso's height is."""

    env_id: str
    planar: bool  # moves in the x-z plane (2D walkers) or is fixed-base
    locomotion: bool  # has a free-moving root whose x velocity is reported in info
    nq: int
    nv: int
    obs_dim: int
    act_dim: int
    dt: float
    max_episode_steps: int
    terminates: bool  # ends episodes when unhealthy
    # qpos index of the torso height (None: not meaningful). Absolute height in metres, except
    # HalfCheetah, whose rootz slide joint is 0 at its 0.7 m start height (torso z = 0.7 + qpos[1]).
    height_index: int | None
    healthy_z: tuple[float, float] | None  # healthy torso height range, if the env has one
    ctrl_cost_weight: float
    healthy_reward: float
    # Rough forward speed (m/s) a decent PPO policy reaches within a few hundred thousand steps;
    # the offline author uses it to set judge targets.
    reachable_speed: float
    info_keys: tuple[str, ...] = field(default_factory=tuple)


ENVS: dict[str, EnvFacts] = {
    f.env_id: f
    for f in (
        EnvFacts(
            "HalfCheetah-v5",
            True,
            True,
            9,
            9,
            17,
            6,
            0.05,
            1000,
            False,
            1,
            None,
            0.1,
            0.0,
            2.0,
            ("x_position", "x_velocity", "reward_forward", "reward_ctrl"),
        ),
        EnvFacts(
            "Ant-v5",
            False,
            True,
            15,
            14,
            105,
            8,
            0.05,
            1000,
            True,
            2,
            (0.2, 1.0),
            0.5,
            1.0,
            0.8,
            (
                "x_position",
                "y_position",
                "distance_from_origin",
                "x_velocity",
                "y_velocity",
                "reward_forward",
                "reward_ctrl",
                "reward_contact",
                "reward_survive",
            ),
        ),
        EnvFacts(
            "Hopper-v5",
            True,
            True,
            6,
            6,
            11,
            3,
            0.008,
            1000,
            True,
            1,
            (0.7, float("inf")),
            1e-3,
            1.0,
            1.0,
            (
                "x_position",
                "z_distance_from_origin",
                "x_velocity",
                "reward_forward",
                "reward_ctrl",
                "reward_survive",
            ),
        ),
        EnvFacts(
            "Walker2d-v5",
            True,
            True,
            9,
            9,
            17,
            6,
            0.008,
            1000,
            True,
            1,
            (0.8, 2.0),
            1e-3,
            1.0,
            1.0,
            (
                "x_position",
                "z_distance_from_origin",
                "x_velocity",
                "reward_forward",
                "reward_ctrl",
                "reward_survive",
            ),
        ),
        EnvFacts(
            "Humanoid-v5",
            False,
            True,
            24,
            23,
            348,
            17,
            0.015,
            1000,
            True,
            2,
            (1.0, 2.0),
            0.1,
            5.0,
            0.5,
            (
                "x_position",
                "y_position",
                "tendon_length",
                "tendon_velocity",
                "distance_from_origin",
                "x_velocity",
                "y_velocity",
                "reward_survive",
                "reward_forward",
                "reward_ctrl",
                "reward_contact",
            ),
        ),
        EnvFacts(
            "HumanoidStandup-v5",
            False,
            False,
            24,
            23,
            348,
            17,
            0.015,
            1000,
            False,
            2,
            None,
            0.1,
            1.0,
            0.0,
            (
                "x_position",
                "y_position",
                "z_distance_from_origin",
                "tendon_length",
                "tendon_velocity",
                "reward_linup",
                "reward_quadctrl",
                "reward_impact",
            ),
        ),
        EnvFacts(
            "Swimmer-v5",
            True,
            True,
            5,
            5,
            8,
            2,
            0.04,
            1000,
            False,
            None,
            None,
            1e-4,
            0.0,
            0.3,
            (
                "x_position",
                "y_position",
                "distance_from_origin",
                "x_velocity",
                "y_velocity",
                "reward_forward",
                "reward_ctrl",
            ),
        ),
        EnvFacts(
            "Reacher-v5",
            True,
            False,
            4,
            4,
            10,
            2,
            0.02,
            50,
            False,
            None,
            None,
            1.0,
            0.0,
            0.0,
            ("reward_dist", "reward_ctrl"),
        ),
        EnvFacts(
            "InvertedPendulum-v5",
            True,
            False,
            2,
            2,
            4,
            1,
            0.04,
            1000,
            True,
            None,
            None,
            0.0,
            1.0,
            0.0,
            ("reward_survive",),
        ),
        EnvFacts(
            "InvertedDoublePendulum-v5",
            True,
            False,
            3,
            3,
            9,
            1,
            0.05,
            1000,
            True,
            None,
            None,
            0.0,
            10.0,
            0.0,
            ("reward_survive", "distance_penalty", "velocity_penalty"),
        ),
    )
}


def facts(env_id: str) -> EnvFacts:
    """The env's facts; ValueError naming the known envs when the id is not one of them."""
    try:
        return ENVS[env_id]
    except KeyError:
        raise ValueError(
            f"env_id: unknown environment {env_id!r}; choose one of {', '.join(ENVS)}"
        ) from None
