"""How the offline author measures a criterion: a `Measure` (a per-step series over the
trajectory and how a window of it reduces to one number), and the built-in metrics as measures.

The behaviours give each criterion they add a measure; rendering/judge.py writes judge code from
them, and its `_reduce` implements every reducer in REDUCERS.
"""

from __future__ import annotations

from dataclasses import dataclass

REDUCERS = (
    "mean", "late_mean", "max", "min", "final", "rate", "sum", "integral", "displacement",
    "count_rises", "last",
)  # fmt: skip


@dataclass(frozen=True)
class Measure:
    """How judge code measures a criterion: `series` is a numpy expression over `t` (the
    trajectory) with one value per step; `reduce` names how a window of it becomes one number;
    `args` are the reducer's thresholds (count_rises: up, down)."""

    series: str
    reduce: str
    args: tuple[float, ...] = ()
    unit: str = ""
    label: str = ""
    after: float = 0.0  # seconds: only the steps from this time on ("within 2 seconds")

    def __post_init__(self) -> None:
        if self.reduce not in REDUCERS and self.reduce != "alive":
            raise ValueError(f"unknown reducer {self.reduce!r}; one of {', '.join(REDUCERS)}")


# The built-in metrics the composer uses, as measures over a window (judge code measures every
# criterion of a session once it has judge code).
METRIC_MEASURES: dict[str, Measure] = {
    "mean_x_velocity": Measure("P.forward_velocity(ENV, t)", "mean", (), "m/s",
                               "mean forward velocity"),
    "mean_backward_velocity": Measure("-P.forward_velocity(ENV, t)", "mean", (), "m/s",
                                      "mean backward velocity"),
    "forward_distance": Measure("P.forward_velocity(ENV, t)", "integral", (), "m",
                                "forward distance"),
    "mean_abs_lateral_velocity": Measure("np.abs(P.lateral_velocity(ENV, t))", "mean", (),
                                         "m/s", "mean sideways speed"),
    "mean_horizontal_speed": Measure("P.speed(ENV, t)", "mean", (), "m/s",
                                     "mean horizontal speed"),
    "late_horizontal_speed": Measure("P.speed(ENV, t)", "late_mean", (), "m/s",
                                     "horizontal speed over the second half"),
    "final_distance_from_start": Measure("P.position(ENV, t)", "displacement", (), "m",
                                         "distance from the start"),
    "mean_height": Measure("P.height(ENV, t)", "mean", (), "m", "mean torso height"),
    "late_mean_height": Measure("P.height(ENV, t)", "late_mean", (), "m",
                                "torso height over the second half"),
    "max_height": Measure("P.height(ENV, t)", "max", (), "m", "peak torso height"),
    "mean_uprightness": Measure("P.uprightness(ENV, t)", "mean", (), "", "mean uprightness"),
    "late_uprightness": Measure("P.uprightness(ENV, t)", "late_mean", (), "",
                                "uprightness over the second half"),
    "late_torso_pitch_up": Measure("P.pitch(ENV, t)", "late_mean", (), "rad",
                                   "nose-up torso pitch"),
    "mean_abs_pitch": Measure("np.abs(P.pitch(ENV, t))", "mean", (), "rad", "mean torso pitch"),
    "mean_yaw_rate": Measure("P.rotation_step(ENV, t, 'yaw')", "rate", (), "rad/s",
                             "mean counter-clockwise yaw rate"),
    "mean_clockwise_yaw_rate": Measure("-P.rotation_step(ENV, t, 'yaw')", "rate", (), "rad/s",
                                       "mean clockwise yaw rate"),
    "total_turn": Measure("P.rotation_step(ENV, t, 'yaw')", "sum", (), "rad",
                          "net counter-clockwise turn"),
    "late_joint_speed": Measure("P.joint_speed(ENV, t)", "late_mean", (), "rad/s",
                                "joint speed over the second half"),
    "max_foot_height": Measure("np.max(P.feet_heights(ENV, t), axis=-1)", "max", (), "m",
                               "peak foot height"),
    "flight_fraction": Measure("1.0 * (np.max(P.feet_contact(ENV, t), axis=-1) == 0)", "mean",
                               (), "", "share of steps with no foot down"),
    "mean_peak_knee_height": Measure("np.max(P.knee_heights(ENV, t), axis=-1)", "mean", (), "m",
                                     "mean height of the higher knee"),
    "mean_abs_pole_angle": Measure("P.pole_angle(ENV, t)", "mean", (), "rad",
                                   "mean pole deviation from vertical"),
    "final_distance_to_target": Measure("P.fingertip_distance(ENV, t)", "final", (), "m",
                                        "final fingertip-target distance"),
    "mean_distance_to_target": Measure("P.fingertip_distance(ENV, t)", "mean", (), "m",
                                       "mean fingertip-target distance"),
    "final_joint_speed": Measure("np.linalg.norm(t['qvel'][:, :2], axis=-1)", "final", (),
                                 "rad/s", "final joint speed"),
}  # fmt: skip
