"""What an env spec holds: `EnvSpec` and its entries (state, observation, action, info keys,
bodies, joints), frozen pydantic models that serialize to plain JSON.

`spec` builds one from the live env (through `spec_reader`); `EnvSpec.to_prompt` writes it as
the text LLM prompts include (`_prompt`, below).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from activities.behaviours.catalog import primitives_for
from activities.behaviours.layout import layout

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


# --- the spec as prompt text: units and axes, what reward code reads, the layouts, the info
# keys, the env's own reward and termination, the bodies and the behaviour library ---------

# The measure the spec's primitives example calls: the first of these the env has.
_EXAMPLE_MEASURES = ("height", "forward_velocity", "pole_angle", "fingertip_distance")


def _prompt(s: EnvSpec) -> str:
    axes = "+x forward, +z up" if s.locomotion else "+z up"
    out = [
        f"# {s.env_id} (read from the live MuJoCo model)",
        f"dt = {s.dt:g} s per step ({s.frame_skip} physics steps of {s.timestep:g} s), at most "
        f"{s.max_episode_steps} steps per episode. nq = {s.nq}, nv = {s.nv}, obs_dim = "
        f"{s.obs_dim}, act_dim = {s.act_dim}.",
        "Units: m, m/s, rad, rad/s, N, N m. A hinge's qpos is its body's angle vs the parent, "
        f"positive by the right-hand rule about the given axis. World axes: {axes}.",
        *_turns(s),
        "",
        "## What reward code reads",
        f"- `obs`, `next_obs` ({s.obs_dim},): the observation before / after the step (below).",
        f"- `action` ({s.act_dim},): the action applied.",
        f'- `info`: the env\'s info dict (keys below) plus `info["qpos"]` ({s.nq},) and '
        f'`info["qvel"]` ({s.nv},): copies of the full simulator state after the step (never '
        "clipped; they include what obs leaves out).",
        *(
            [
                '- `info["feet_z"]`, `info["feet_contact"]` and `info["knees_z"]` (where the body '
                "has feet and knees): added for rewards that read them, best through the foot and "
                "knee primitives below."
            ]
            if layout(s.env_id).feet
            else []
        ),
        "",
        f"## Observation: {s.obs_dim} entries",
    ]
    for source, excluded in (("qpos", s.excluded_qpos), ("qvel", s.excluded_qvel)):
        states = s.qpos if source == "qpos" else s.qvel
        out += [f'- NOT in obs: info["{source}"][{i}] {states[i].meaning}' for i in excluded]
    shown: tuple[str, ...] = ()
    for seg in s.observation:
        head = f"obs[{seg.start}:{seg.end}] = {seg.expr}"
        if not seg.block:
            out.append(head)
            out += [f"- obs[{e.index}] = {e.expr} {e.meaning}" for e in seg.entries]
        elif seg.width > 1:
            if seg.rows != shown:  # the blocks share one body order: list it once
                shown = seg.rows
                out.append(
                    "Per-body blocks, body k: " + ", ".join(f"{k} {r}" for k, r in enumerate(shown))
                )
            n, w = len(seg.rows), seg.width
            out.append(
                f"{head}: {n} bodies x {w}, body k at obs[{seg.start} + {w}k], {seg.description}."
            )
        else:
            # Per-dof arrays share qvel's indexing, whose lines above name the joints.
            lo, hi = seg.entries[0].source_index, seg.entries[-1].source_index + 1
            out.append(f"{head}: {seg.description}, for the joints of qvel[{lo}:{hi}] in order")
    ranges = {a.ctrl_range for a in s.action}
    each = f", each in [{s.action[0].ctrl_range[0]:g}, {s.action[0].ctrl_range[1]:g}]"
    each = each if len(ranges) == 1 else ""
    noun = "entry" if s.act_dim == 1 else "entries"
    out += ["", f"## Action: {s.act_dim} {noun}{each}; joint force = gear * action"]
    for a in s.action:
        low, high = a.ctrl_range
        name = f" (actuator {a.actuator})" if a.actuator and a.actuator != a.joint else ""
        rng = "" if each else f" in [{low:g}, {high:g}]"
        out.append(f"- action[{a.index}]{rng}: {a.joint}{name}, gear {a.gear:g}")
    out += ["", "## info keys"]
    out += [f"- {k.key}{f' {k.shape}' if k.shape else ''}: {k.meaning}" for k in s.info]
    out += [
        "",
        "## The env's own reward (yours replaces it) and termination (in force unless your "
        "SHAPING changes it)",
        f"- reward = {s.reward_formula}",
        f"- terminates early unless healthy: {s.healthy_rule}"
        if s.terminates
        else "- never terminates early; episodes run to the time limit",
    ]
    bodies = [b.label + ("" if b.name else f" (unnamed, child of {b.parent})") for b in s.bodies]
    out += ["", f"## Bodies (model order): {', '.join(bodies)}"]
    out += ["", "## Primitives (the behaviour library)", *_primitives(s)]
    return "\n".join(out) + "\n"


def _turns(s: EnvSpec) -> list[str]:
    """Which root angles keep counting past +-pi and which wrap: the key fact for flips."""
    world = s.bodies[0].label
    parents = {b.label: b.parent for b in s.bodies}
    roots = [j for j in s.joints if parents[j.body] == world]
    hinges = [f"qpos[{j.qpos_start}] {j.name}" for j in roots if j.type == "hinge" and not j.range]
    out = []
    if hinges:
        out.append(
            f"Unbounded root angles: {', '.join(hinges)} never "
            f"{'wraps' if len(hinges) == 1 else 'wrap'}: a full turn adds 2 pi, so it counts "
            "whole flips or spins."
        )
    if any(j.type == "free" for j in roots):
        out.append(
            "The root's orientation is a quaternion: angles read from it wrap (P.pitch and "
            "P.roll within +-pi/2, P.heading within +-pi); count turns with P.rotation_step."
        )
    return out


def _primitives(s: EnvSpec) -> list[str]:
    """The behaviour library for this env: how to call it (an example that runs as written),
    then every primitive that applies, with its full signature."""
    listed = primitives_for(s.env_id)
    names = {item.name for item in listed}
    example = next(n for n in _EXAMPLE_MEASURES if n in names)
    out = [
        "`import primitives as P` measures the body, so you need not index qpos yourself. "
        "Measures and reward forms take the env id first, then the step's `info` in reward "
        "code (a number back):",
        "```python",
        "import numpy as np",
        "import primitives as P",
        "",
        f'ENV = "{s.env_id}"',
        f"value = P.{example}(ENV, info)",
        "```",
        f"or the `trajectory` in judge code (one value per step): `P.{example}(ENV, trajectory)`. "
        "Signs: +x is forward, +y left; uprightness is 1 upright, 0 on its side, -1 upside down; "
        "pitch is nose-up positive; heading and yaw rate are counter-clockwise positive. Reward "
        "forms return [0, 1]: 1 where the behaviour is, 0.1 at `margin` outside it (velocity and "
        "yaw-rate forms rise linearly from 0 at rest to 1 at `target`).",
    ]
    if "rotation_step" in names:
        axis = "yaw" if layout(s.env_id).root == "swimmer" else "pitch"
        out.append(
            "Counting turns (a flip, a spin): in reward code add "
            f'`P.rotation_step(ENV, info, "{axis}")` up over the episode\'s steps (reset at '
            "its start); in judge code "
            f'`P.total_rotation(ENV, trajectory, "{axis}")[-1]` is the episode\'s total.'
        )
    lay = layout(s.env_id)
    if lay.feet:
        out.append(f"Feet, in the order the foot primitives return them: {', '.join(lay.feet)}.")
    if lay.knees:
        out.append(f"Knees, in order: {', '.join(lay.knees)}.")
    if lay.parts:
        # Poses by body part ("arms out to the sides", "a wide stance") are read through these.
        out.append(f"Parts (for part_height, part_distance): {', '.join(lay.parts)}.")
    body = [i for i in listed if i.signature.startswith(f"P.{i.name}(env, data")]
    groups = (
        ("measures", [i for i in body if not i.reward]),
        ("reward forms", [i for i in body if i.reward]),
        ("helpers", [i for i in listed if i not in body]),
    )
    for title, group in groups:
        out.append(f"- {title}: " + ", ".join(f"`{i.signature}`" for i in group))
    return out
