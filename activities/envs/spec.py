"""Env specs for LLM prompts, read off the live Gymnasium MuJoCo v5 environments.

`env_spec(env_id)` builds the real env and derives from its MuJoCo model, data and attributes
the observation layout (every index: source array and entry, joint or body, meaning), the
action layout, the info keys, the healthy/termination rules and the env's own reward.
What cannot be read off the env (info meanings, reward formulas, a few constants `_get_obs`
hard-codes) lives in `meanings`. tests/activities/envs/test_spec.py checks every
index against live data.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from activities.behaviours.catalog import primitives_for
from activities.behaviours.layout import layout
from activities.envs import meanings
from activities.envs.catalog import facts

Transform = Literal["identity", "sin", "cos", "clip"]
# Reacher's last two entries: world x, y of body "fingertip" minus those of body "target".
FINGERTIP = "fingertip_minus_target"
# Per-body arrays (one row per body, world body 0 included in the array): row components.
BLOCK_COMPONENTS: dict[str, tuple[str, ...]] = {
    "cinert": ("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz", "m*dx", "m*dy", "m*dz", "m"),
    "cvel": ("wx", "wy", "wz", "vx", "vy", "vz"),
    "cfrc_ext": ("tx", "ty", "tz", "fx", "fy", "fz"),
}
BLOCK_MEANINGS: dict[str, str] = {
    "cinert": "inertia about the subtree centre of mass (COM), world-aligned: Ixx Iyy Izz Ixy "
    "Ixz Iyz (kg m^2), mass * (body COM - subtree COM) xyz, mass (kg)",
    "cvel": "velocity at the subtree COM, world-aligned: angular wx wy wz (rad/s), "
    "linear vx vy vz (m/s)",
    "cfrc_ext": "external (contact) wrench about the subtree COM, world-aligned: torque tx ty "
    "tz (N m), force fx fy fz (N); 0 while the body touches nothing",
    "qfrc_actuator": "actuator force (N m for hinges)",
}
_JOINT_TYPES = ("free", "ball", "slide", "hinge")
_JOINT_SIZES = {"free": (7, 6), "ball": (4, 3), "slide": (1, 1), "hinge": (1, 1)}  # (qpos, qvel)
_ROOT_ROTATION = {"x": "roll", "y": "pitch", "z": "yaw"}
# The measure the spec's primitives example calls: the first of these the env has.
_EXAMPLE_MEASURES = ("height", "forward_velocity", "pole_angle", "fingertip_distance")


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


def env_spec(env_id: str) -> EnvSpec:
    """The env's spec, read off a live instance (built once per process, by one thread: the
    LLM pool asks from many activity threads at once)."""
    with _SPEC_LOCK:
        return _env_spec(env_id)


_SPEC_LOCK = threading.Lock()


@functools.cache
def _env_spec(env_id: str) -> EnvSpec:
    facts(env_id)  # unknown ids fail here with the catalog's message
    import gymnasium as gym  # lazy: importing this module stays cheap

    from activities.envs.quiet import quiet_mujoco

    quiet_mujoco()
    env = gym.make(env_id)
    try:
        return _build(env_id, env)
    finally:
        env.close()


def _axis(a: Any) -> str:
    nonzero = [k for k in range(3) if abs(a[k]) > 1e-9]
    if len(nonzero) == 1:
        k = nonzero[0]
        return ("-" if a[k] < 0 else "") + "xyz"[k]
    return "(" + ", ".join(f"{v:.2g}" for v in a) + ")"


def _state(m: Any, labels: list[str]) -> tuple[list[StateEntry], list[StateEntry]]:
    """Name and explain every qpos and qvel entry from the model's joints."""
    qpos: list[StateEntry] = []
    qvel: list[StateEntry] = []
    for j in range(m.njnt):
        name, kind = m.joint(j).name, _JOINT_TYPES[int(m.jnt_type[j])]
        b = int(m.jnt_bodyid[j])
        body, parent = labels[b], labels[int(m.body_parentid[b])]
        root = int(m.body_parentid[b]) == 0  # moves in the world frame
        qa, da, ax = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j]), _axis(m.jnt_axis[j])
        lo, hi = m.jnt_range[j]
        rng = f", range [{lo:.3g}, {hi:.3g}]" if m.jnt_limited[j] else ""
        if kind == "free":
            pos = [f"{body} {c} position (world)" for c in "xy"] + [f"{body} z = height (world)"]
            quat = [f"{body} orientation quaternion {c} (world)" for c in "wxyz"]
            # Unlike a planar root's angle, a quaternion comes back after a full turn.
            quat[0] += "; it repeats every full turn: count flips and spins with P.total_rotation"
            lin = [f"{body} {c} velocity (world)" for c in "xyz"]
            ang = [f"{body} angular velocity about its local {c} axis" for c in "xyz"]
            pm, vm = pos + quat, lin + ang
        elif kind == "ball":
            pm = [f"{body} orientation quaternion {c} vs {parent}" for c in "wxyz"]
            vm = [f"{body} angular velocity about its local {c} axis" for c in "xyz"]
        elif kind == "slide":
            # World coordinate = body offset along the axis + (qpos - qpos0); qpos0 is the ref.
            off = float(m.body_pos[b] @ m.jnt_axis[j]) - float(m.qpos0[qa])
            what = f"{body} {ax} position" + (" = height" if ax == "z" else "")
            if not root:
                pm = [f"{body} slide along {ax} vs {parent}{rng}"]
            elif abs(off) > 1e-9:
                pm = [f"{what} minus {off:g} (world {ax} = {off:g} + qpos[{qa}])"]
            else:
                pm = [f"{what} (world){rng}"]
            vm = [f"{body} {ax} velocity" + (" (world)" if root else "")]
        elif root:
            turn = _ROOT_ROTATION.get(ax.strip("-"), "rotation")
            # Never wrapped by MuJoCo: what a flip or a spin is counted with.
            rng = rng or ", unbounded (keeps counting past +-pi)"
            pm = [f"{body} {turn} angle about world {ax}{rng}"]
            vm = [f"{body} {turn} rate about world {ax}"]
        else:
            pm, vm = [f"{body} vs {parent} about {ax}{rng}"], ["angular velocity"]
        common = {"joint": name, "joint_type": kind, "body": body}
        sides: tuple[tuple[StateSource, int, list[str], list[StateEntry]], ...] = (
            ("qpos", qa, pm, qpos),
            ("qvel", da, vm, qvel),
        )
        for source, start, texts, out in sides:
            for k, text in enumerate(texts):
                meaning = f"{name}: {text}"
                out.append(StateEntry(source=source, index=start + k, meaning=meaning, **common))
    return qpos, qvel


def _parts(u: Any) -> list[tuple[str, list[int], Transform, tuple[float, float] | None]]:
    """What `_get_obs` concatenates: (source, flat indices, transform, clip) per segment."""
    cls, m, d = type(u).__name__, u.model, u.data
    if cls == "ReacherEnv":
        arm = [0, 1]
        return [
            ("qpos", arm, "cos", None),
            ("qpos", arm, "sin", None),
            ("qpos", list(range(2, m.nq)), "identity", None),
            ("qvel", arm, "identity", None),
            (FINGERTIP, [0, 1], "identity", None),
        ]
    if cls == "InvertedDoublePendulumEnv":
        links, lim = list(range(1, m.nq)), (-10.0, 10.0)
        return [
            ("qpos", [0], "identity", None),
            ("qpos", links, "sin", None),
            ("qpos", links, "cos", None),
            ("qvel", list(range(m.nv)), "clip", lim),
            ("qfrc_constraint", [0], "clip", lim),
        ]
    struct = dict(u.observation_structure)
    skip = struct.pop("skipped_qpos", 0)
    if skip + struct.pop("qpos") != m.nq or struct.pop("qvel") != m.nv:
        raise ValueError(f"{cls}: unexpected observation_structure {u.observation_structure}")
    qvel_clip = meanings.QVEL_CLIP.get(cls)
    parts: list[tuple[str, list[int], Transform, tuple[float, float] | None]] = [
        ("qpos", list(range(skip, m.nq)), "identity", None),
        ("qvel", list(range(m.nv)), "clip" if qvel_clip else "identity", qvel_clip),
    ]
    for source in ("cinert", "cvel", "qfrc_actuator", "cfrc_ext"):
        size, total = struct.pop(source, 0), getattr(d, source).size
        if size:  # the env keeps the tail of the array: bodies 1.., or the non-root dofs
            clip = getattr(u, "_contact_force_range", None) if source == "cfrc_ext" else None
            clip = tuple(map(float, clip)) if clip else None
            parts.append(
                (source, list(range(total - size, total)), "clip" if clip else "identity", clip)
            )
    if any(struct.values()):
        raise ValueError(f"{cls}: observation parts this spec does not know: {struct}")
    return parts


def _wrap(expr: str, transform: Transform, clip: tuple[float, float] | None) -> str:
    if transform == "clip" and clip:
        return f"clip({expr}, {clip[0]:g}, {clip[1]:g})"
    return expr if transform == "identity" else f"{transform}({expr})"


def _observation(
    u: Any, labels: list[str], qpos: list[StateEntry], qvel: list[StateEntry]
) -> list[ObsSegment]:
    m, state = u.model, {"qpos": qpos, "qvel": qvel}
    segments: list[ObsSegment] = []
    start = 0
    for source, idx, transform, clip in _parts(u):
        width = len(BLOCK_COMPONENTS.get(source, "x"))
        entries = []
        for k, i in enumerate(idx):
            joint = body = None
            if source in state:
                s = state[source][i]
                joint, body, meaning, ref = s.joint, s.body, s.meaning, f"{source}[{i}]"
            elif source == FINGERTIP:
                meaning = f"fingertip minus target, {'xy'[i]} (world)"
                ref = f"(xpos[fingertip] - xpos[target])[{i}]"
            elif source in BLOCK_COMPONENTS:
                row, col = divmod(i, width)
                body = labels[row]
                meaning = f"{body} {BLOCK_COMPONENTS[source][col]} ({source})"
                ref = f"{source}[{row}, {col}]"
            else:  # per-dof generalized forces
                joint = m.joint(int(m.dof_jntid[i])).name
                what = "actuator" if source == "qfrc_actuator" else "constraint (limit/contact)"
                meaning, ref = f"{what} force on {joint}", f"{source}[{i}]"
            entries.append(
                ObsEntry(
                    index=start + k,
                    source=source,
                    source_index=i,
                    transform=transform,
                    clip=clip,
                    joint=joint,
                    body=body,
                    expr=_wrap(ref, transform, clip),
                    meaning=meaning,
                )
            )
        lo, hi = idx[0] // width, idx[-1] // width + 1
        expr = f"{source}[{lo}:{hi}]" if idx == list(range(idx[0], idx[-1] + 1)) else f"{idx}"
        block = source in BLOCK_MEANINGS
        rows = tuple(labels[lo:hi]) if width > 1 else tuple(str(e.joint) for e in entries)
        segments.append(
            ObsSegment(
                start=start, end=start + len(idx), source=source,
                expr=_wrap(expr, transform, clip), transform=transform, clip=clip, block=block,
                width=width, rows=rows if block else (),
                description=BLOCK_MEANINGS.get(source, ""), entries=tuple(entries),
            )
        )  # fmt: skip
        start += len(idx)
    return segments


def _pair(value: Any) -> tuple[float, float]:
    return float(value[0]), float(value[1])


def _triple(value: Any) -> tuple[float, float, float]:
    return float(value[0]), float(value[1]), float(value[2])


def _build(env_id: str, env: Any) -> EnvSpec:
    import numpy as np

    u = env.unwrapped
    m, cls = u.model, type(u).__name__
    names = [m.body(b).name for b in range(m.nbody)]
    labels = [n or f"body{b}" for b, n in enumerate(names)]
    qpos, qvel = _state(m, labels)
    segments = _observation(u, labels, qpos, qvel)
    used = {(e.source, e.source_index) for s in segments for e in s.entries}

    joints = []
    for j in range(m.njnt):
        kind = _JOINT_TYPES[int(m.jnt_type[j])]
        joints.append(
            JointInfo(
                name=m.joint(j).name, type=kind, body=labels[int(m.jnt_bodyid[j])],
                qpos_start=int(m.jnt_qposadr[j]), qpos_size=_JOINT_SIZES[kind][0],
                dof_start=int(m.jnt_dofadr[j]), dof_size=_JOINT_SIZES[kind][1],
                axis=_triple(m.jnt_axis[j]),
                range=_pair(m.jnt_range[j]) if m.jnt_limited[j] else None,
            )
        )  # fmt: skip
    action = []
    for a in range(m.nu):
        # Every actuator here drives a joint (trntype joint); its first trnid is that joint.
        j = int(m.actuator_trnid[a, 0])
        action.append(
            ActionEntry(
                index=a, actuator=m.actuator(a).name, joint=m.joint(j).name,
                joint_type=_JOINT_TYPES[int(m.jnt_type[j])],
                ctrl_range=_pair(m.actuator_ctrlrange[a]), gear=float(m.actuator_gear[a, 0]),
            )
        )  # fmt: skip

    env.reset(seed=0)
    _, _, _, _, step_info = env.step(np.zeros(env.action_space.shape))
    tendons = ", ".join(m.tendon(t).name for t in range(m.ntendon))
    info = []
    for key, value in step_info.items():
        text = meanings.INFO_OVERRIDES.get((cls, key)) or meanings.INFO_MEANINGS.get(key)
        text = text or meanings.UNKNOWN_INFO
        if key.startswith("tendon_") and tendons:
            text += f" ({tendons})"
        info.append(InfoKey(key=key, shape=tuple(np.shape(value)), meaning=text))

    params: dict[str, float | tuple[float, float]] = {}
    for attr, value in vars(u).items():
        if attr.endswith(("_weight", "_cost_range", "_force_range")) or attr == "_healthy_reward":
            params[attr.lstrip("_")] = _pair(value) if isinstance(value, tuple) else float(value)
    healthy = meanings.HEALTHY_RULES.get(cls)
    ranges = {
        f"healthy_{k}_range": _pair(getattr(u, f"_healthy_{k}_range"))
        for k in ("z", "angle", "state")
        if hasattr(u, f"_healthy_{k}_range")
    }
    bodies = [
        BodyInfo(id=b, name=names[b], label=labels[b], parent=labels[int(m.body_parentid[b])])
        for b in range(m.nbody)
    ]
    return EnvSpec(
        env_id=env_id, env_class=cls, nq=m.nq, nv=m.nv, nbody=m.nbody,
        obs_dim=int(env.observation_space.shape[0]), act_dim=int(env.action_space.shape[0]),
        dt=float(u.dt), timestep=float(m.opt.timestep), frame_skip=int(u.frame_skip),
        max_episode_steps=env.spec.max_episode_steps, locomotion=facts(env_id).locomotion,
        bodies=tuple(bodies), joints=tuple(joints), qpos=tuple(qpos), qvel=tuple(qvel),
        excluded_qpos=tuple(s.index for s in qpos if ("qpos", s.index) not in used),
        excluded_qvel=tuple(s.index for s in qvel if ("qvel", s.index) not in used),
        observation=tuple(segments), action=tuple(action), info=tuple(info),
        terminates=meanings.terminates_early(u),
        healthy_rule=healthy(u) if healthy else None, reward_params=params,
        reward_formula=meanings.REWARD_FORMULAS[cls](u), **ranges,
    )  # fmt: skip


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
