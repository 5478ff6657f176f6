"""Phase and clock observations (SHAPING's `phases` and `clock`): what a phased reward knows,
kept by the trusted side and shown to the policy too.

A reward that keeps its phase on `self` is not Markov for the policy: the crouch before a launch
and the crouch after a landing look the same to it, and it cannot tell which one it is paid for.
With `phases`, the phase is kept here instead: an ordered list, each phase but the last ending
when one measure of the state crosses a threshold, advanced after every step from the simulator
state (never by generated code), at most one phase per step. The reward reads the phase the step
ended in as info["phase"] (0, 1, ...) and the accumulated nose-up turn as info["turn"] (with
info["turn_roll"] and info["turn_yaw"] where a phase ends on a roll or a turn about the
vertical: "roll over twice", "spin three times, then stop"); the policy gets
the phase as one more input. `clock` adds the time since the episode began, as a fraction of the
training episode's length (info["clock"], one more input). `position` shows the policy the
root's ground position (x, y), which every MuJoCo locomotion env leaves out of its observation:
without it "hop in place" or "come back to the start" pays for where the body is while the
policy cannot see where that is. Training, evaluation, checkpoints
and the judge's episodes track them the same way, so a trained policy sees what it trained on.

The exported model's input is the env's observation followed by these inputs, in the order
phase, clock, position (`policy_obs`); every rollout here appends them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from activities.behaviours import primitives as P
from activities.behaviours.layout import FREE, LAYOUTS, PLANAR, SWIMMER

MAX_PHASES = 8
Measure = Literal["height", "turn", "turn_roll", "turn_yaw", "time", "forward_velocity"]
# The accumulated turns a phase can end on, and the torso axis each is about.
TURNS = {"turn": "pitch", "turn_roll": "roll", "turn_yaw": "yaw"}
# What each measure needs of the body (checked when SHAPING is parsed).
MOVING = (PLANAR, FREE, SWIMMER)
POSITION_INPUTS = 2  # SHAPING `position`: the root's x and y (y is 0 on planar bodies)


class Phase(BaseModel):
    """One phase: it lasts until `until` is above (or below) the threshold; the last phase has
    no `until` and lasts to the episode's end."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(default="", max_length=40)
    until: Measure | None = None
    above: float | None = None
    below: float | None = None

    @model_validator(mode="after")
    def _one_threshold(self) -> Phase:
        given = [v for v in (self.above, self.below) if v is not None]
        if self.until is None and given:
            raise ValueError("a phase with above/below needs `until` (the measure it reads)")
        if self.until is not None and len(given) != 1:
            raise ValueError(f"a phase ending on {self.until!r} needs exactly one of above/below")
        if not all(math.isfinite(v) for v in given):
            raise ValueError("above/below must be finite numbers")
        return self


def check_phases(phases: tuple[Phase, ...], env_id: str) -> str | None:
    """Why `phases` cannot apply to `env_id` (one line), or None."""
    if not phases:
        return None
    if not 2 <= len(phases) <= MAX_PHASES:
        return f"2 to {MAX_PHASES} phases (got {len(phases)})"
    if any(p.until is None for p in phases[:-1]):
        return "every phase but the last needs `until` (else the next one is never reached)"
    if phases[-1].until is not None:
        return "the last phase lasts to the episode's end: drop its `until`"
    lay = LAYOUTS.get(env_id)
    for p in phases:
        if p.until == "height" and (lay is None or lay.height_index is None):
            return f"{env_id} has no torso height: `until: height` cannot be measured"
        if p.until in ("turn", "forward_velocity") and (lay is None or lay.root not in MOVING):
            return f"{env_id} has no free-moving body: `until: {p.until}` cannot be measured"
        if p.until == "turn_roll" and (lay is None or lay.root != FREE):
            return f"{env_id} cannot roll (a free body can): `until: turn_roll` cannot be measured"
        if p.until == "turn_yaw" and (lay is None or lay.root not in (FREE, SWIMMER)):
            return f"{env_id} cannot turn about the vertical: `until: turn_yaw` cannot be measured"
    return None


class PhaseClock:
    """The phase, turn and elapsed steps of `n` copies of `env_id`, advanced together."""

    def __init__(
        self,
        env_id: str,
        phases: tuple[Phase, ...],
        clock: bool,
        n: int,
        limit: int,
        dt: float,
        position: bool = False,
    ) -> None:
        self.env_id, self.phases, self.clock, self.position = env_id, phases, clock, position
        self.limit, self.dt = max(1, limit), dt
        self.width = int(bool(phases)) + int(clock) + POSITION_INPUTS * int(position)
        # The root's ground position (x, y) after the last step; 0 at an episode's start, which
        # is where every env here starts its body (within its reset noise).
        self.where = np.zeros((n, POSITION_INPUTS))
        self.phase = np.zeros(n, dtype=np.int64)
        # The accumulated turn per measure: the nose-up one always (info["turn"]), a roll or a
        # turn about the vertical only when a phase ends on it.
        self.turns = {
            k: np.zeros(n) for k in TURNS if k == "turn" or any(p.until == k for p in phases)
        }
        self.steps = np.zeros(n, dtype=np.int64)
        # Each copy's qpos after its last step (to turn exactly between states), and whether
        # it belongs to the running episode: its first step has only the end-of-step rate.
        self.last: np.ndarray | None = None
        self.known = np.zeros(n, dtype=bool)

    def reset(self, which: np.ndarray | None = None) -> None:
        """Start the episodes of the copies in `which` (a mask; all when None) afresh."""
        sel = slice(None) if which is None else which
        self.phase[sel], self.steps[sel] = 0, 0
        for turn in self.turns.values():
            turn[sel] = 0.0
        self.known[sel] = False
        self.where[sel] = 0.0

    def advance(self, data: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """One step of every copy, from its state after the step (`data`: "qpos", "qvel" as
        (n, ...) rows, and the env's info columns); what the reward reads of it."""
        self.steps += 1
        moving = LAYOUTS.get(self.env_id)
        if self.position:
            self.where = np.asarray(P.position(self.env_id, data), dtype=float).reshape(
                len(self.turn), POSITION_INPUTS
            )
        if self.phases and moving is not None and moving.root in MOVING:
            for key, turned in self._turned(data).items():
                self.turns[key] += turned
        for i, phase in enumerate(self.phases[:-1]):
            here = self.phase == i
            if here.any():
                value = self._measure(phase.until, data)
                met = value > phase.above if phase.above is not None else value < phase.below
                self.phase = np.where(here & met, i + 1, self.phase)
        out: dict[str, np.ndarray] = {}
        if self.phases:
            out["phase"] = self.phase.astype(float)
            out.update({k: v.copy() for k, v in self.turns.items()})
        if self.clock:
            out["clock"] = self.steps / self.limit
        return out

    @property
    def turn(self) -> np.ndarray:
        """The accumulated nose-up turn of each copy (rad)."""
        return self.turns["turn"]

    def _turned(self, data: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The turn of each copy during this step about each tracked axis: exact from the
        state before, as the judge's `total_rotation` counts it (the end-of-step rate times
        dt, which a policy can make positive at every step without turning, only on an
        episode's first step)."""
        qpos = np.asarray(data["qpos"], dtype=float).reshape(len(self.phase), -1)
        turned: dict[str, np.ndarray] = {}
        last = self.last
        every = last is not None and bool(self.known.all())  # the usual step: all exact
        for key in self.turns:
            axis = TURNS[key]
            if every and last is not None:
                turned[key] = np.asarray(P.turn_between(self.env_id, last, qpos, axis), float)
                continue
            out = np.zeros(len(self.phase))
            if self.last is not None and self.known.any():
                exact = np.asarray(P.turn_between(self.env_id, self.last, qpos, axis), dtype=float)
                out[self.known] = exact[self.known]
            # First steps: only the end-of-step rate is known.
            step = np.asarray(P.rotation_step(self.env_id, data, axis), dtype=float)
            out[~self.known] = np.broadcast_to(step, out.shape)[~self.known]
            turned[key] = out
        self.last, self.known = qpos.copy(), np.ones_like(self.known)
        return turned

    def _measure(self, name: str | None, data: Mapping[str, Any]) -> np.ndarray:
        if name in TURNS:
            return self.turns[name]
        if name == "time":
            return self.steps * self.dt
        fn = P.height if name == "height" else P.forward_velocity
        return np.broadcast_to(np.asarray(fn(self.env_id, data), dtype=float), self.phase.shape)

    def features(self) -> np.ndarray:
        """The policy's extra inputs, (n, width): the phase as a fraction of the last one, then
        the clock, then the ground position (x, y in metres)."""
        cols = []
        if self.phases:
            cols.append(self.phase / (len(self.phases) - 1))
        if self.clock:
            cols.append(self.steps / self.limit)
        if self.position:
            cols += [self.where[:, 0], self.where[:, 1]]
        return np.stack(cols, axis=1) if cols else np.zeros((len(self.phase), 0))


def policy_obs(obs: np.ndarray, clock: PhaseClock | None) -> np.ndarray:
    """The policy's input: the env's observation (one row or (n, d)), then the extra inputs."""
    if clock is None or clock.width == 0:
        return obs
    extra = clock.features()
    return np.concatenate([obs, extra[0] if np.ndim(obs) == 1 else extra], axis=-1)


def with_inputs(env: gym.Env, extra: int) -> gym.Env:
    """`env` declaring `extra` more observation entries (unbounded), as a model trained with
    phase or clock inputs expects; for building models and normalisers, never stepped."""
    if extra == 0:
        return env
    space = env.observation_space
    assert isinstance(space, gym.spaces.Box) and space.shape is not None
    wider = gym.spaces.Box(-np.inf, np.inf, (space.shape[0] + extra,), dtype=space.dtype)
    return _Declared(env, wider)


def model_inputs(env: gym.Env, model: Any) -> gym.Env:
    """`env` declaring the input `model` takes (its observation, then any phase and clock
    inputs): the space a saved normaliser of that model is checked against."""
    mine, theirs = env.observation_space.shape, model.observation_space.shape
    if not mine or not theirs or theirs[0] < mine[0]:
        raise ValueError(f"the model takes observations of shape {theirs}, the env gives {mine}")
    return with_inputs(env, theirs[0] - mine[0])


class _Declared(gym.ObservationWrapper):
    def __init__(self, env: gym.Env, space: gym.spaces.Box) -> None:
        super().__init__(env)
        self.observation_space = space

    def observation(self, observation: Any) -> Any:
        raise RuntimeError("with_inputs: this env only declares the model's input space")
