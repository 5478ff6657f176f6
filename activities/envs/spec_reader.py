"""Reading an env spec off a live env: every qpos and qvel entry named from the model's joints,
the observation `_get_obs` concatenates (source array, entry, transform), the actions, the info
keys of one step, and the healthy rule and reward parameters (`_build` puts them together).

What cannot be read off the env lives in `meanings`; `spec` calls `_build` once per env.
"""

from __future__ import annotations

from typing import Any

from activities.envs import meanings
from activities.envs.catalog import facts
from activities.envs.spec_model import (
    FINGERTIP,
    ActionEntry,
    BodyInfo,
    EnvSpec,
    InfoKey,
    JointInfo,
    ObsEntry,
    ObsSegment,
    StateEntry,
    StateSource,
    Transform,
)

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
