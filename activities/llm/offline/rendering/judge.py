"""Judge code for compositions the built-in code judge cannot measure.

The built-in judge (activities/behaviours/metrics.py) measures whole episodes by named metrics.
A pose of the hands, a count of jumps, a flip's turn, or anything judged per phase ("slowed
below 1 m/s after the sprint") needs more: for those the offline author writes judge code, as
an LLM judge author would, from the same primitives the reward uses. Each criterion is a
`Measure` (behaviours/measures.py): a per-step series over the trajectory and how to reduce it
over a window (the whole episode, or the steps of one phase: `info_phase` where the trajectory
has it, else the phase's time span). Scoring, survival and the diagnosis follow the built-in
judge, so both judges read alike.
"""

from __future__ import annotations

from activities.envs.catalog import facts
from activities.llm.offline.behaviours.measures import METRIC_MEASURES, Measure
from workflows.contracts.judging import Criterion

SURVIVAL = "alive_fraction"
# Failure tags the reviser reads, by what a criterion measures.
TAGS = {
    "mean_x_velocity": ("too_slow", "too_fast"),
    "mean_backward_velocity": ("too_slow", "too_fast"),
    "alive_fraction": ("falls_early", None),
    "late_mean_height": ("too_low", "too_high"),
    "max_height": ("jumps_too_low", None),
    "mean_uprightness": ("not_upright", None),
    "late_uprightness": ("not_upright", None),
}


def measure_of(c: Criterion, own: dict[str, Measure]) -> Measure | None:
    """The measure judge code uses for a criterion: its own, else its metric's."""
    if c.name in own:
        return own[c.name]
    if c.metric == SURVIVAL:
        return Measure("", "alive", (), "", "alive fraction")
    return METRIC_MEASURES.get(c.metric or "")


def render_judge(
    env_id: str,
    prompt: str,
    criteria: list[Criterion],
    own: dict[str, Measure],
    windows: dict[str, tuple[int, ...]],
    phase_times: tuple[float | None, ...] = (),
) -> str:
    """Judge code (`judge_fn(trajectory)`) that measures every criterion."""
    f = facts(env_id)
    rows, lines = [], []
    for c in criteria:
        m = measure_of(c, own)
        if m is None:
            raise ValueError(f"no judge measure for criterion {c.name!r} ({c.metric})")
        tag_low, tag_high = TAGS.get(c.metric or "", (None, None))
        rows.append(
            {
                "name": c.name,
                "label": m.label or c.description,
                "unit": m.unit or c.unit,
                "target": c.target,
                "direction": c.direction,
                "tolerance": c.tolerance,
                "weight": c.weight,
                "survival": m.reduce == "alive",
                # The latest phase it is measured in (-1: the whole episode).
                "phase": max(windows.get(c.name, ()), default=-1),
                "low": tag_low or f"{c.name}_short",
                "high": tag_high or f"{c.name}_over",
            }
        )
        if m.reduce == "alive":
            lines.append(f"        {c.name!r}: alive,")
        else:
            window = tuple(windows.get(c.name, ()))
            lines.append(
                f"        {c.name!r}: _reduce(_col({m.series}, n), _mask(t, n, {window}, "
                f"{m.after!r}), {m.reduce!r}, {tuple(m.args)!r}),"
            )
    shown = "".join(ch for ch in " ".join(prompt.split()) if ch.isprintable())[:200]
    shown = shown.replace('"', "'")
    times = [None if x is None else round(x, 4) for x in phase_times]
    head = [
        f'# Judge for "{shown}" on {env_id}.',
        "# Written by the policyforge offline author: each criterion is a primitive measured",
        "# over the episode (or one phase of it), scored as the built-in code judge scores.",
        "import math",
        "",
        "import numpy as np",
        "import primitives as P",
        "",
        f'ENV = "{env_id}"',
        f"DT = {f.dt!r}",
        f"HORIZON = {f.max_episode_steps}",
        f"PHASE_TIMES = {times!r}",
        f"CRITERIA = {rows!r}",
    ]
    return "\n".join(head) + "\n" + _BODY.replace("__MEASURES__", "\n".join(lines)) + "\n"


_BODY = '''

def _col(x, n):
    """A per-step series as a float array of n rows (a constant is repeated)."""
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        return np.full(n, float(a))
    return a


def _mask(t, n, phases, after):
    """The steps of some phases (none: the whole episode) from `after` seconds on; each visit
    to a phase loses its first fifth, the change from the phase before."""
    late = (np.arange(n) + 1) * DT >= after
    if not phases:
        return late
    if "info_phase" in t:
        ph = np.asarray(t["info_phase"], dtype=float)[:n]
    elif PHASE_TIMES and all(x is not None for x in PHASE_TIMES):
        ph = np.searchsorted(np.array(PHASE_TIMES), (np.arange(n) + 1) * DT, side="right")
    else:
        return late
    mask = np.zeros(n, dtype=bool)
    for phase in phases:
        idx = np.nonzero(np.round(ph) == phase)[0]
        if len(idx):
            mask[idx[len(idx) // 5 :]] = True
    return mask & late


def _reduce(x, mask, how, args):
    """One number from the masked rows of a series (0 where the window is empty)."""
    x = x[: len(mask)]
    sel = x[mask[: len(x)]]
    if len(sel) == 0:
        return 0.0
    if how == "mean":
        return float(np.mean(sel))
    if how == "late_mean":
        return float(np.mean(sel[len(sel) // 2 :]))
    if how == "max":
        return float(np.max(sel))
    if how == "min":
        return float(np.min(sel))
    if how == "final":
        return float(np.mean(sel[-max(1, len(sel) // 10) :]))
    if how == "last":
        return float(sel[-1])
    if how == "rate":
        return float(np.sum(sel) / (len(sel) * DT))
    if how == "sum":
        return float(np.sum(sel))
    if how == "integral":
        return float(np.sum(sel) * DT)
    if how == "displacement":
        d = sel[-1] - sel[0]
        return float(math.hypot(d[0], d[1]))
    if how == "count_rises":
        up, down = args
        count, armed = 0, True
        for v in sel:
            if armed and v > up:
                count, armed = count + 1, False
            elif not armed and v < down:
                armed = True
        return float(count)
    return 0.0


def _score(value, c):
    """1 when met, falling towards 0 with the shortfall (as the built-in code judge)."""
    t, tol = c["target"], c["tolerance"]
    if c["direction"] == "near":
        err = abs(value - t)
        if err <= tol:
            return 1.0
        scale = 2.0 * tol if tol > 0 else max(0.1 * abs(t), 1e-6)
        return min(1.0, max(0.0, 1.0 - (err - tol) / scale))
    if c["direction"] == "at_least":
        if value >= t:
            return 1.0
        if t > 0:
            return min(1.0, max(0.0, value / t))
        return min(1.0, max(0.0, 1.0 - (t - value) / max(abs(t), 1.0)))
    if value <= t:
        return 1.0
    if t > 0:
        return min(1.0, max(0.0, t / value))
    return min(1.0, max(0.0, 1.0 - (value - t) / max(abs(t), 1.0)))


def _text(value, c):
    word = {"near": "near", "at_least": "at least", "at_most": "at most"}[c["direction"]]
    unit = (" " + c["unit"]) if c["unit"] else ""
    return (
        f"{c['label']} {value:.2f}{unit} against a target of {word} {c['target']:.2f}{unit}"
    )


def judge_fn(trajectory):
    t = trajectory
    n = len(t["action"])
    if n == 0:
        return {"criteria": {c["name"]: _score(0.0, c) for c in CRITERIA},
                "measured": {c["name"]: 0.0 for c in CRITERIA},
                "diagnosis": "The episode is empty.", "failure_tags": ["empty_episode"]}
    horizon = int(t["meta_max_steps"]) if "meta_max_steps" in t else HORIZON
    ended = bool(np.asarray(t["terminated"])[-1]) if "terminated" in t else False
    alive = 1.0 if not ended else min(1.0, n / max(horizon, 1))
    values = {
__MEASURES__
    }
    # scores: each criterion's own progress, 1 exactly when its measured value meets it (what
    # the trusted side checks the measured values against); shortfall: for the diagnosis, that
    # progress cut by a fall and by the earlier phases (coming to rest after no run, or landing
    # after no turn, is not the sequence). The verdict is every criterion met.
    scores, shortfall, measured, failing, tags = {}, {}, {}, [], []
    for c in CRITERIA:
        value = values[c["name"]]
        value = float(value) if math.isfinite(value) else 0.0
        met = _score(value, c)
        scores[c["name"]] = met
        shortfall[c["name"]] = met if c["survival"] else met * alive
        measured[c["name"]] = value
    for c in CRITERIA:
        earlier = [shortfall[d["name"]] for d in CRITERIA
                   if -1 < d["phase"] < c["phase"] and not d["survival"]]
        if earlier:
            shortfall[c["name"]] = min(shortfall[c["name"]], min(earlier))
    for c in CRITERIA:
        value, cut = measured[c["name"]], c["weight"] * (1.0 - shortfall[c["name"]])
        if scores[c["name"]] < 1.0:
            failing.append((cut, _text(value, c)))
            tags.append(c["low"] if value < c["target"] else c["high"])
        elif shortfall[c["name"]] < 1.0:
            why = f"only for {n} of {horizon} steps" if alive < 1.0 else "before its phase"
            failing.append((cut, _text(value, c) + ", but " + why))
    failing.sort(key=lambda f: -f[0])
    if not failing:
        shown = "; ".join(_text(measured[c["name"]], c) for c in CRITERIA[:2])
        sentences = [f"All criteria met: {shown}."]
    else:
        sentences = [failing[0][1][0].upper() + failing[0][1][1:] + "."]
        if len(failing) > 1:
            sentences.append("Also short: " + "; ".join(d for _, d in failing[1:3]) + ".")
    return {
        "criteria": scores,
        "measured": measured,
        "diagnosis": " ".join(sentences),
        "failure_tags": list(dict.fromkeys(tags)),
    }'''
