"""What an env spec holds: `EnvSpec` and its entries (state, observation, action, info keys,
bodies, joints), frozen pydantic models that serialize to plain JSON.

`spec` builds one from the live env (through `spec_reader`); `EnvSpec.to_prompt` writes it as
the text LLM prompts include (through `spec_prompt`).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from activities.envs.spec_prompt import _prompt

Transform = Literal["identity", "sin", "cos", "clip"]
# Reacher's last two entries: world x, y of body "fingertip" minus those of body "target".
FINGERTIP = "fingertip_minus_target"


class _Frozen(BaseModel):
    # inf appears in healthy ranges; "strings" keeps it in JSON as "Infinity" instead of null.
    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")


StateSource = Literal["qpos", "qvel"]


class StateEntry(_Frozen):
    """One entry of data.qpos or data.qvel (what reward code gets as info["qpos"/"qvel"])."""

    source: StateSource
    index: int
    joint: str
    joint_type: str
    body: str
    meaning: str


class ObsEntry(_Frozen):
    """One observation index: where its value comes from, as an expression, and what it means."""

    index: int
    source: str  # an mjData array name, or FINGERTIP
    source_index: int  # flat index into that array (row * width + column for per-body arrays)
    transform: Transform = "identity"
    clip: tuple[float, float] | None = None
    joint: str | None = None
    body: str | None = None
    expr: str  # e.g. "clip(qvel[3], -10, 10)"
    meaning: str


class ObsSegment(_Frozen):
    """A run of observation indices from one source array (a whole per-body block, or
    single entries), described once for prompts."""

    start: int
    end: int  # exclusive
    source: str
    expr: str  # e.g. "qpos[2:15]", "clip(cfrc_ext[1:14], -1, 1)"
    transform: Transform
    clip: tuple[float, float] | None
    block: bool  # per-body / per-joint block, described as a whole in prompts
    width: int  # entries per row of a block
    rows: tuple[str, ...]  # block row order (body labels, or joints for qfrc_actuator)
    description: str
    entries: tuple[ObsEntry, ...]


class ActionEntry(_Frozen):
    """One action index: the actuator, the joint it drives, its control range and gear."""

    index: int
    actuator: str  # the model's name, "" when unnamed
    joint: str
    joint_type: str
    ctrl_range: tuple[float, float]
    gear: float


class InfoKey(_Frozen):
    """One key of the env's step info, its shape and what it means."""

    key: str
    shape: tuple[int, ...]
    meaning: str


class BodyInfo(_Frozen):
    """One body of the model and its parent."""

    id: int
    name: str  # the model's name, "" when unnamed
    label: str  # name, or "body<id>" when unnamed
    parent: str


class JointInfo(_Frozen):
    """One joint: its type, body, slices of qpos/qvel, axis and range."""

    name: str
    type: str
    body: str
    qpos_start: int
    qpos_size: int
    dof_start: int
    dof_size: int
    axis: tuple[float, float, float]
    range: tuple[float, float] | None


class EnvSpec(_Frozen):
    """Everything an LLM prompt says about an env: layouts of observation, action and
    state, info keys, termination and the env's own reward."""

    env_id: str
    env_class: str
    nq: int
    nv: int
    nbody: int
    obs_dim: int
    act_dim: int
    dt: float
    timestep: float
    frame_skip: int
    max_episode_steps: int | None
    locomotion: bool
    bodies: tuple[BodyInfo, ...]
    joints: tuple[JointInfo, ...]
    qpos: tuple[StateEntry, ...]
    qvel: tuple[StateEntry, ...]
    excluded_qpos: tuple[int, ...]  # qpos indices the observation leaves out
    excluded_qvel: tuple[int, ...]
    observation: tuple[ObsSegment, ...]
    action: tuple[ActionEntry, ...]
    info: tuple[InfoKey, ...]
    terminates: bool  # episodes end early when unhealthy
    healthy_z_range: tuple[float, float] | None = None
    healthy_angle_range: tuple[float, float] | None = None
    healthy_state_range: tuple[float, float] | None = None
    healthy_rule: str | None
    reward_params: dict[str, float | tuple[float, float]]
    reward_formula: str

    def obs_entries(self) -> list[ObsEntry]:
        """Every observation index in order, across the segments."""
        return [e for seg in self.observation for e in seg.entries]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types; infinite range bounds become the strings "Infinity"/"-Infinity"."""
        return json.loads(self.model_dump_json())

    def to_prompt(self) -> str:
        """The spec as the text LLM prompts include."""
        return _prompt(self)
