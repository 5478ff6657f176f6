"""Environment shaping beyond the reward: how a candidate presents the env to its policy.

A reward module may set `SHAPING`, a dict of plain data (never code: the trusted side only reads
values and applies them itself). The sandbox reads it when it loads the module and returns it as
JSON; `parse` checks it against this schema and the env, with a one-line error naming the field.

- observation: `obs_drop` (indices hidden from the policy), `obs_scale` (a factor on what is
  left);
- action: `action_scale` (the policy's action is scaled about the centre of the range: the
  policy commands this fraction of it);
- initial state: `init_noise` (a factor on the env's own reset noise around its initial pose);
- termination: `max_episode_steps` (shorter episodes), `min_height` (the episode ends when the
  torso drops below this height, for bodies that have one), `healthy_z_range` (the torso
  heights within which the body counts as healthy, replacing the env's own band, for envs that
  end episodes on torso height: a high jump or ground work needs it relaxed).

Training applies all of them (batched trainer). The observation and action parts are linear, so
the export folds them into the plain SB3 model (`export.py`): dropped inputs get zero weights,
the normaliser's statistics are rescaled, the action layer and log std are scaled. The saved
model acts on the env's own observations and actions with no adapter, and evaluation and the
judge see the behaviour in the unshaped env (its own reset and termination), so scores stay
comparable across candidates. `phases`, `clock` and `position` (the root's ground x, y, which
the envs leave out) add inputs that no env has: the saved model
takes the env's observation followed by them, and every rollout of it here appends them
(`phase_clock.policy_obs`). The other exception is `healthy_z_range`: it changes what the episode
is (a jump above the env's band would otherwise end it), so evaluation plays under it too
(`termination_kwargs`, read by `sim.make_env`). Action clipping and repeat are not offered:
neither folds into a plain SB3 policy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from activities.behaviours.layout import LAYOUTS
from activities.envs.catalog import facts
from activities.training.phase_clock import (
    MAX_PHASES,
    MOVING,
    POSITION_INPUTS,
    Phase,
    PhaseClock,
    check_phases,
)

MAX_HEALTHY_Z = 5.0  # metres: the highest torso band a SHAPING may set


class Shaping(BaseModel):
    """A candidate's shaping (see the module docstring); the defaults change nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    obs_drop: tuple[int, ...] = Field(default=(), max_length=1024)  # recorded in summaries
    obs_scale: float = Field(default=1.0, gt=0.0, le=100.0)
    action_scale: float = Field(default=1.0, gt=0.0, le=1.0)
    init_noise: float = Field(default=1.0, ge=0.0, le=10.0)
    max_episode_steps: int | None = Field(default=None, ge=10)
    min_height: float | None = Field(default=None, ge=0.0, le=5.0)
    healthy_z_range: tuple[float, float] | None = None
    phases: tuple[Phase, ...] = Field(default=(), max_length=MAX_PHASES)
    clock: bool = False
    position: bool = False

    @field_validator("healthy_z_range")
    @classmethod
    def _band(cls, band: tuple[float, float] | None) -> tuple[float, float] | None:
        if band is not None and not 0.0 <= band[0] < band[1] <= MAX_HEALTHY_Z:
            raise ValueError(f"needs 0 <= low < high <= {MAX_HEALTHY_Z:g} metres (got {band})")
        return band

    @property
    def observes(self) -> int:
        """How many inputs it adds to the policy's observation (phase, clock, position)."""
        return int(bool(self.phases)) + int(self.clock) + POSITION_INPUTS * int(self.position)

    def phase_clock(self, env_id: str, n: int, env_limit: int) -> PhaseClock | None:
        """The trackers of its phases and clock for `n` copies (None when it adds no input);
        the clock counts against the training episode's length."""
        if not self.observes:
            return None
        limit = self.max_episode_steps or env_limit
        return PhaseClock(
            env_id, self.phases, self.clock, n, limit, facts(env_id).dt, position=self.position
        )

    @property
    def empty(self) -> bool:
        """Whether this shaping changes nothing."""
        return self == Shaping()

    def keep_mask(self, obs_dim: int) -> np.ndarray:
        """1 for the observation indices the policy sees, 0 for the dropped ones."""
        mask = np.ones(obs_dim)
        mask[list(self.obs_drop)] = 0.0
        return mask


class ShapingError(ValueError):
    """SHAPING that cannot be applied; the message names the field and what to change."""


def _validated(raw: Any, env_id: str) -> Shaping:
    """SHAPING checked against the schema and what the env has; ShapingError otherwise."""
    if raw is None or raw == {}:
        return Shaping()
    if not isinstance(raw, dict):
        raise ShapingError(f"SHAPING must be a dict of settings, not {type(raw).__name__}")
    try:
        shaping = Shaping.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"][:1]) or "SHAPING"
        raise ShapingError(f"SHAPING[{where!r}]: {err['msg']}") from None
    why = check_phases(shaping.phases, env_id)
    if why is not None:
        raise ShapingError(f"SHAPING['phases']: {why}")
    lay = LAYOUTS.get(env_id)
    if shaping.position and (lay is None or lay.root not in MOVING):
        raise ShapingError(
            f"SHAPING['position']: {env_id} has no free-moving body whose position to show"
        )
    if shaping.healthy_z_range is not None and facts(env_id).healthy_z is None:
        raise ShapingError(
            f"SHAPING['healthy_z_range']: {env_id} does not end episodes on torso height"
        )
    return shaping


def evaluation_clock(raw: Any, env_id: str, env_limit: int) -> PhaseClock | None:
    """The phase and clock trackers a single evaluation env keeps for SHAPING (None without
    `phases` or `clock`), counting as training did."""
    return _validated(raw, env_id).phase_clock(env_id, 1, env_limit)


def termination_kwargs(raw: Any, env_id: str) -> dict[str, Any]:
    """The gym.make settings that make an episode end as SHAPING's `healthy_z_range` says (none
    without one): evaluation plays under the termination training used."""
    band = _validated(raw, env_id).healthy_z_range
    return {} if band is None else {"healthy_z_range": band}


def parse(raw: Any, env_id: str, obs_dim: int, max_steps: int) -> Shaping:
    """A candidate's SHAPING checked against the schema and the env; ShapingError otherwise."""
    shaping = _validated(raw, env_id)
    bad = [i for i in shaping.obs_drop if not 0 <= i < obs_dim]
    if bad:
        raise ShapingError(f"SHAPING['obs_drop']: {bad} outside the observation (0..{obs_dim - 1})")
    if len(set(shaping.obs_drop)) >= obs_dim:
        raise ShapingError("SHAPING['obs_drop'] hides every observation index: keep some")
    if shaping.max_episode_steps is not None and shaping.max_episode_steps > max_steps:
        raise ShapingError(
            f"SHAPING['max_episode_steps']: at most the env's {max_steps} (got "
            f"{shaping.max_episode_steps})"
        )
    if shaping.min_height is not None and height_index(env_id) is None:
        raise ShapingError(f"SHAPING['min_height']: {env_id} has no torso height to watch")
    return shaping


def height_index(env_id: str) -> int | None:
    """The qpos index of the torso height (None where height means nothing)."""
    found = LAYOUTS.get(env_id)
    return found.height_index if found is not None else None


def height_offset(env_id: str) -> float:
    """What to add to qpos[height_index] for the torso height in metres."""
    found = LAYOUTS.get(env_id)
    return found.height_offset if found is not None else 0.0
