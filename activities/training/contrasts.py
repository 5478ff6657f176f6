"""The episodes judge code is validated on: real physics episodes that must not pass.

Run inside the validate_judge child only. A judge is validated like a measurement (DESIGN.md):
on episodes whose behaviour is known, all recorded in the evaluation's trajectory format:

- `random`: random actions for the whole episode (the env's length, or the request's cap);
- `zero`: zero actions for the whole episode (a contrast only where the behaviour library says
  it misses the criteria: "stand still" is met by zero actions on some bodies);
- `short`: random actions ended after a few dozen steps, recorded as terminated (a fall);
- `opposite`: where a criterion asks for a direction the body can show the opposite of (a
  forward speed or distance, a backward speed, a turning rate or turn), the root driven the
  other way: its velocity set before each step, zero actions, so the body really moves and
  every array (qpos, qvel, the env's info) says so;
- `toward`: the root driven the way the criteria ask. Not a contrast: the library cross-checks
  the judge's values on it, and its reward is what the contrasts carry (below).

A contrast episode carries the reward of the best-paid validation episode instead of its own
(`reward`, `term_*`, and likewise `env_reward`): the reward is what the policy is paid, not what
it did, and a judge that scores the reward would pass these episodes.

The env's own reward's policy is the one contrast left out: it needs a policy trained on that
reward, which validation does not have (it runs before any training, offline, in seconds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.training.reward_runtime import LoadedReward, Rewards
from activities.training.rollout import collect
from activities.training.sim import make_env, mujoco_env
from workflows.contracts.judging import Criterion

# The short episode: random actions ended (as if fallen) after this many steps.
SHORT_STEPS = 40
# A driven episode goes this much beyond an "at least" target (a "near" one: at it), so that a
# judge measuring the magnitude finds the criterion met on the opposite episode.
DRIVE_MARGIN = 1.25
# The driven speed's integral correction per step (what friction took off the last step).
DRIVE_GAIN = 0.5
DRIVE_MAX_FACTOR = 4.0

# Metrics with a direction the body can be driven along: (axis, sign of the axis's world rate
# per unit of the metric, whether the metric is a whole-episode total rather than a rate).
DIRECTED: dict[str, tuple[str, float, bool]] = {
    "mean_x_velocity": ("x", 1.0, False),
    "forward_distance": ("x", 1.0, True),
    "mean_backward_velocity": ("x", -1.0, False),
    "mean_yaw_rate": ("yaw", 1.0, False),
    "total_turn": ("yaw", 1.0, True),
    "mean_clockwise_yaw_rate": ("yaw", -1.0, False),
}
AXIS_WORDS = {
    ("x", 1.0): "driven forwards",
    ("x", -1.0): "driven backwards",
    ("yaw", 1.0): "spun counter-clockwise",
    ("yaw", -1.0): "spun clockwise",
}
AXIS_UNITS = {"x": "m/s", "yaw": "rad/s"}

# How a validation episode counts: "always" a contrast, a contrast only where the library says
# it misses a criterion ("unless_met"), or "never" (the driven-towards episode).
Contrast = str


@dataclass
class Episode:
    """One validation episode: its name, what it is in words, and its arrays."""

    name: str
    what: str  # "an episode of zero actions for 1000 steps"
    contrast: Contrast
    arrays: dict[str, np.ndarray]

    @property
    def steps(self) -> int:
        return len(self.arrays["action"])


def _intended(c: Criterion) -> float | None:
    """The metric value a directional criterion asks for (its sign is the direction), or None
    when it asks for no direction (a target at or around zero, an upper bound)."""
    t = c.target
    if c.direction == "at_least" and t > 0:
        return t * DRIVE_MARGIN
    if c.direction == "at_most" and t < 0:
        return t * DRIVE_MARGIN
    if c.direction == "near" and abs(t) > c.tolerance:
        return t
    return None


def drives(criteria: Iterable[Criterion], env_id: str, horizon: int, dt: float) -> dict[str, float]:
    """The world rate per axis ("x" m/s, "yaw" rad/s) the criteria ask the body to move at:
    from the first criterion that names a directional metric of each axis the env can move
    along; empty when none does."""
    root = layout(env_id).root
    movable = {"x": root in (PLANAR, FREE, SWIMMER), "yaw": root in (FREE, SWIMMER)}
    out: dict[str, float] = {}
    for c in criteria:
        if c.metric not in DIRECTED:
            continue
        axis, sign, total = DIRECTED[c.metric]
        value = _intended(c)
        if value is None or axis in out or not movable[axis]:
            continue
        rate = value / (horizon * dt) if total else value
        out[axis] = sign * rate
    return out


def _heading(env_id: str, qpos: np.ndarray) -> float:
    root = layout(env_id).root
    if root == SWIMMER:
        return float(qpos[2])
    if root == FREE:
        w, x, y, z = (float(v) for v in qpos[3:7])
        return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return 0.0


class Drive:
    """A policy of zero actions that sets the root's velocity before each step so that it
    moves at `rates` ("x" along the world x axis in m/s, "yaw" about the vertical in rad/s),
    correcting each step for what the last one fell short (friction, contacts)."""

    def __init__(self, env: Any, env_id: str, rates: dict[str, float]) -> None:
        self.env_id, self.rates = env_id, rates
        self.data = mujoco_env(env).data
        self.dt = float(mujoco_env(env).dt)
        self.yaw_dof = 2 if layout(env_id).root == SWIMMER else 5
        self.commands = dict(rates)
        self.last: tuple[float, float] | None = None
        self.zero = np.zeros(env.action_space.shape or (), dtype=np.float64)

    def __call__(self, _obs: np.ndarray) -> np.ndarray:
        qpos, qvel = self.data.qpos, self.data.qvel
        pose = (float(qpos[0]), _heading(self.env_id, qpos))
        if self.last is not None:
            got = {
                "x": (pose[0] - self.last[0]) / self.dt,
                "yaw": math.remainder(pose[1] - self.last[1], 2 * math.pi) / self.dt,
            }
            for axis, want in self.rates.items():
                bound = DRIVE_MAX_FACTOR * abs(want)
                moved = self.commands[axis] + DRIVE_GAIN * (want - got[axis])
                self.commands[axis] = min(max(moved, -bound), bound)
        self.last = pose
        if "x" in self.commands:
            qvel[0] = self.commands["x"]
        if "yaw" in self.commands:
            qvel[self.yaw_dof] = self.commands["yaw"]
        return self.zero


def _driven_words(rates: dict[str, float]) -> str:
    parts = []
    for axis, rate in rates.items():
        word = AXIS_WORDS[(axis, 1.0 if rate > 0 else -1.0)]
        parts.append(f"{word} at {abs(rate):.2f} {AXIS_UNITS[axis]}")
    return " and ".join(parts)


def _length(steps: int, terminated: bool) -> str:
    return f"{steps} steps" + (" (it ended early)" if terminated else "")


def episodes(
    env_id: str,
    reward: Rewards | LoadedReward,
    criteria: list[Criterion],
    seed: int = 0,
    max_steps: int | None = None,
) -> list[Episode]:
    """The validation episodes for these criteria (module docstring), each at most
    `max_steps` long (None: the env's own episode length), every contrast carrying the reward
    of the best-paid episode."""
    env = make_env(env_id, reward)
    try:
        limit = env.spec.max_episode_steps if env.spec and env.spec.max_episode_steps else 1000
        limit = limit if max_steps is None or max_steps <= 0 else min(limit, max_steps)
        dt = float(mujoco_env(env).dt)
        env.action_space.seed(seed)

        def play(act: Any, steps: int) -> dict[str, np.ndarray]:
            arrays, _ = collect(env, act, seed, steps)
            arrays["meta_max_steps"] = np.array(limit)
            return arrays

        random = play(lambda _obs: env.action_space.sample(), limit)
        zeros = np.zeros(env.action_space.shape or (), dtype=np.float64)
        zero = play(lambda _obs: zeros, limit)
        short = play(lambda _obs: env.action_space.sample(), min(SHORT_STEPS, max(1, limit // 4)))
        short["terminated"][-1], short["truncated"][-1] = True, False
        out = [
            Episode("random", _of("random actions", random), "always", random),
            Episode("zero", _of("zero actions", zero), "unless_met", zero),
            Episode("short", _short_words(short), "always", short),
        ]
        rates = drives(criteria, env_id, limit, dt)
        for axis, rate in rates.items():
            arrays = play(Drive(env, env_id, {axis: -rate}), limit)
            words = _driven_words({axis: -rate})
            out.append(
                Episode(f"opposite_{axis}", _of(f"the body {words}", arrays), "always", arrays)
            )
        if rates:
            arrays = play(Drive(env, env_id, rates), limit)
            out.append(
                Episode("toward", _of(f"the body {_driven_words(rates)}", arrays), "never", arrays)
            )
    finally:
        env.close()
    _pay_the_best(out)
    return out


def _short_words(arrays: dict[str, np.ndarray]) -> str:
    return (
        f"an episode of random actions that ended early, as a fall does, after "
        f"{len(arrays['action'])} steps"
    )


def _of(what: str, arrays: dict[str, np.ndarray]) -> str:
    steps, terminated = len(arrays["action"]), bool(arrays["terminated"][-1])
    return f"an episode of {what} for {_length(steps, terminated)}"


def _pay_the_best(episodes: list[Episode]) -> None:
    """Give every contrast episode the reward of the best-paid episode (per step, under the
    session's reward; `env_reward` the env's own best), repeated or cut to its length."""

    def paid(e: Episode) -> dict[str, np.ndarray]:
        return {k: v for k, v in e.arrays.items() if k == "reward" or k.startswith("term_")}

    best = paid(max(episodes, key=lambda e: float(np.mean(e.arrays["reward"]))))
    env_best = max(episodes, key=lambda e: float(np.mean(e.arrays["env_reward"])))
    env_paid = env_best.arrays["env_reward"]
    for e in episodes:
        if e.contrast == "never":
            continue
        n = e.steps
        for k in paid(e):
            del e.arrays[k]
        for k, v in best.items():
            e.arrays[k] = np.resize(v, n)
        e.arrays["env_reward"] = np.resize(env_paid, n)
