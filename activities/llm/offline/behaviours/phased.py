"""Steps one after another, counted repetitions and flips, as a phased reward.

The reward declares its phases in SHAPING["phases"] (activities/training/phase_clock.py): the
trusted side advances them from the simulator state and hands the reward `info["phase"]` (and
`info["turn"]`, the torso's accumulated nose-up turn), and the policy sees the phase as an input.
A step of a sequence lasts its stated duration or a share of the episode (phase ends on `time`);
a counted jump is a rise and a landing per jump (ends on `height`); a flip is crouch, launch,
rotate, land (ends on `height`, `height`, `turn`), as in the reward contract. Each step's terms
pay only in its phases; event phases are paid from a floor at the previous phase's ceiling, so
moving on always pays more than staying. The judge measures each step's criteria over its phase
("slowed to a walk after the sprint") and counts jumps and turns from the body itself.
"""

from __future__ import annotations

import math
from dataclasses import replace

from activities.llm.offline.behaviours.compose import (
    ALIVE_SHARE,
    BONUS,
    PROGRESS,
    Builder,
    Composition,
)
from activities.llm.offline.behaviours.cores import CORES
from activities.llm.offline.behaviours.events import counted_jumps, flip, roll
from activities.llm.offline.behaviours.measures import METRIC_MEASURES, Measure
from activities.llm.offline.behaviours.phase_plan import Gated, Plan, counted
from activities.llm.offline.reading.reader import MAX_STEPS, Parsed
from activities.llm.offline.reading.steps import Step
from activities.llm.offline.words.refusals import NotExpressible
from workflows.contracts.judging import Criterion

SHARED = frozenset({"upright", "straight"})  # terms every phase keeps alike


def is_phased(parsed: Parsed, env_id: str) -> bool:
    """Whether the intent needs phases: several steps, a flip, counted jumps or postures."""
    if len(parsed.steps) > 1:
        return True
    step = parsed.steps[0]
    return counted(step) or (step.core in ("squat", "sit", "lie") and (step.count or 1) >= 2)


def _expand(steps: tuple[Step, ...], env_id: str) -> list[Step]:
    """'squat 3 times': down and up again, three times."""
    out: list[Step] = []
    for s in steps:
        if s.core in ("squat", "sit", "lie") and (s.count or 1) >= 2:
            up = Step("stand", tokens=s.tokens)
            out += [replace(s, count=None), up] * (s.count or 1)
        else:
            out.append(s)
    return out


def build_phased(parsed: Parsed, env_id: str) -> Composition:
    """The phased composition of a sequence, counted jumps or a flip."""
    steps = _expand(parsed.steps, env_id)
    if len(steps) > MAX_STEPS:
        raise NotExpressible(
            f"it asks for {len(steps)} steps; a reward sequences at most {MAX_STEPS}"
        )
    plan = Plan(env_id, steps)
    merged = Builder(env_id, steps[0], parsed.unused)
    gated = Gated()
    events: list[int] = []
    for i, step in enumerate(steps):
        plan.first.append(len(plan.phases))
        if step.core == "flip":
            events += flip(merged, plan, i, step, gated)
        elif step.core == "roll":
            events += roll(merged, plan, i, step, gated)
        elif step.core == "jump" and (step.count or 1) >= 2:
            events += counted_jumps(merged, plan, i, step, gated)
        else:
            p = plan.add(i, plan.labels[i])
            _timed(merged, plan, i, step, p, gated)
            _end_on_turn(plan, steps, i, p)
        plan.close(i)
    if len(plan.phases) > MAX_STEPS:
        raise NotExpressible(
            f"it needs {len(plan.phases)} phases (a counted jump takes two, a flip four); a "
            f"reward declares at most {MAX_STEPS}"
        )
    if len(plan.phases) < 2:
        plan.add(len(steps) - 1, "hold")
    gated.into(merged)
    peak = gated.peak()
    if events:
        top = max(events) + 1
        merged.term(
            "progress",
            " * ".join([f"float(min(phase, {top}))", *merged.progress_factors]),
            round(peak, 4),
            PROGRESS,
            r"\phi_t",
            "a floor per phase reached (so moving on always pays)",
        )
    _finish(merged, steps, peak)
    comp = merged.composition(steps[0].core if len(steps) == 1 else "sequence", parsed)
    windows = {c.name: merged.windows[c.name] for c in comp.criteria if c.name in merged.windows}
    times: tuple[float | None, ...] = tuple(
        p.above if p.until == "time" else None for p in plan.phases[:-1]
    )
    shaping = {**comp.shaping, "phases": [p.shaping() for p in plan.phases]}
    return replace(comp, windows=windows, shaping=shaping, phase_times=times)


def _end_on_turn(plan: Plan, steps: list[Step], i: int, p: int) -> None:
    """ "Spin three times, then stop", "turn 180 degrees, then walk": the phase ends once the
    body has turned that far about the vertical (SHAPING `until: turn_yaw`), not at a time
    guessed for it. The turn counts from the episode's start, so only while no step before
    it turns the body."""
    step = steps[i]
    if i == len(steps) - 1 or step.core not in ("spin", "turn"):
        return
    if any(s.core in ("spin", "turn") or "circle" in s.qualifiers for s in steps[:i]):
        return
    if step.count:
        total = 2.0 * math.pi * step.count
    elif step.angle is not None and step.core == "turn":
        total = step.angle
    else:
        return
    edge = round(0.95 * total, 4)
    if step.direction > 0:
        plan.phases[p] = replace(plan.phases[p], until="turn_yaw", above=edge)
    else:
        plan.phases[p] = replace(plan.phases[p], until="turn_yaw", below=-edge)


def _finish(m: Builder, steps: list[Step], peak: float) -> None:
    """Survival bonus held to a share of what one phase pays, control cost, notes."""
    natural = any(s.natural for s in steps)
    shared = sum(t.weight for t in m.terms if t.name in SHARED)
    m.finish(natural)
    if any(t.name == "alive" for t in m.terms):
        m.term(
            "alive",
            "1.0",
            round(ALIVE_SHARE * (peak + shared), 4),
            BONUS,
            "1",
            "per step the episode lasts",
        )


def _windowed(
    c: Criterion, label: str, phase: int, own: Measure | None
) -> tuple[Criterion, Measure]:
    measure = own or METRIC_MEASURES.get(c.metric or "")
    if measure is None:
        raise NotExpressible(f"the criterion {c.name} cannot be judged per phase")
    crit = c.model_copy(
        update={
            "name": f"{c.name}_in_{label}",
            "description": f"{label} (phase {phase + 1}): {c.description}",
            "metric": None,
            "measure": measure.label,
            "unit": measure.unit,
        }
    )
    return crit, measure


def _timed(m: Builder, plan: Plan, i: int, step: Step, p: int, gated: Gated) -> None:
    """A step that lasts a time: its core's terms gated on its phase, its criteria judged there."""
    b = Builder(plan.env, step)
    b.in_sequence = True
    build = CORES.get(step.core)
    if build is None:
        raise NotExpressible(f"the offline author cannot sequence {step.core}")
    build(b)
    b.check_used()
    label = plan.labels[i]
    names: dict[str, str] = {}
    for t in b.terms:
        if t.name in SHARED:
            old = next((x for x in m.terms if x.name == t.name), None)
            if old is None or old.weight < t.weight:
                m.term(t.name, t.call, t.weight, t.role, t.latex, t.meaning)
            names[t.name] = t.name
            continue
        named = replace(t, name=f"{t.name}_{label}", meaning=f"{t.meaning} ({label})")
        names[t.name] = gated.add(named, (p,))
    for c in b.criteria:
        terms = tuple(names.get(n, n) for n in b.serves[c.name])
        if c.metric == "alive_fraction" or c.name == "stays_upright":
            _merge_shared(m, c, terms)
            continue
        crit, measure = _windowed(c, label, p, b.measures.get(c.name))
        same = next((x for x in m.criteria if x.name == crit.name), None)
        if same is not None and same.model_copy(update={"description": ""}) == crit.model_copy(
            update={"description": ""}
        ):
            m.windows[crit.name] = (*m.windows[crit.name], p)  # the same step again
            continue
        if same is not None:
            crit = crit.model_copy(update={"name": f"{crit.name}_{p + 1}"})
        m.crit(crit, *terms, measure=measure)
        m.windows[crit.name] = (p,)
    m.shaping.update(b.shaping)
    m.notes += [n for n in b.notes if n not in m.notes]
    m.used |= b.used
    m.not_applied += [q for q in b.not_applied if q not in m.not_applied]


def _merge_shared(m: Builder, c: Criterion, terms: tuple[str, ...]) -> None:
    old = next((x for x in m.criteria if x.name == c.name), None)
    if old is None:
        m.crit(c, *terms)
    elif c.target > old.target:
        m.criteria = [c if x.name == c.name else x for x in m.criteria]
