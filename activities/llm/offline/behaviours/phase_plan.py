"""The phases of a phased reward: which step each belongs to, when each ends (SHAPING's
`until`), and the terms that pay only in some of them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import activities.llm.offline.behaviours.library as lib
from activities.llm.offline.behaviours.compose import Builder, Term
from activities.llm.offline.reading.steps import Step
from activities.llm.offline.words.refusals import NotExpressible

# Seconds a counted jump or a flip is given in a sequence (the time phases after it start then).
EVENT_SECONDS = {"jump": 1.2, "flip": 2.5, "roll": 2.5}
MIN_PHASE_S = 0.5


@dataclass(frozen=True)
class Phase:
    """One phase of the plan: its SHAPING entry and which step it belongs to."""

    name: str
    step: int
    until: str | None = None
    above: float | None = None
    below: float | None = None

    def shaping(self) -> dict[str, Any]:
        """The SHAPING["phases"] entry."""
        out: dict[str, Any] = {"name": self.name}
        if self.until is not None:
            out["until"] = self.until
            out["above" if self.above is not None else "below"] = (
                self.above if self.above is not None else self.below
            )
        return out


def counted(step: Step) -> bool:
    """Whether a step's phases end on the body's events (a flip, a roll, jumps counted) not on
    time."""
    return step.core in ("flip", "roll") or (step.core == "jump" and (step.count or 1) >= 2)


def label(step: Step) -> str:
    """A step's name in phases, terms and criteria: its verb, or its behaviour."""
    if step.core == "locomotion":
        return step.verb or "move"
    return {"stop": "rest", "rear_up": "rear", "pose": "pose"}.get(step.core, step.core)


class Plan:
    """The phases of a sequence, with the seconds each time phase ends at."""

    def __init__(self, env_id: str, steps: list[Step]) -> None:
        self.env = env_id
        self.steps = steps
        self.f = lib.facts(env_id)
        self.phases: list[Phase] = []
        self.first: list[int] = []  # each step's first phase
        self.labels = self._labels()
        self.ends = self._times()

    def _labels(self) -> list[str]:
        """A name per step; steps asked for alike share one ("squat 3 times"), different steps
        with one verb are numbered ("run forward, then run backward": run_1, run_2)."""
        keys = [replace(s, tokens=(), quantities=()) for s in self.steps]
        base = [label(s) for s in self.steps]
        kinds: dict[str, list] = {}
        for k, lab in zip(keys, base, strict=True):
            if k not in kinds.setdefault(lab, []):
                kinds[lab].append(k)
        return [
            f"{lab}_{kinds[lab].index(k) + 1}" if len(kinds[lab]) > 1 else lab
            for k, lab in zip(keys, base, strict=True)
        ]

    def _times(self) -> list[float]:
        """The second at which each step ends (the last: the episode's end)."""
        episode = self.f.max_episode_steps * self.f.dt
        budget: list[float | None] = []
        for s in self.steps:
            if s.duration is not None:
                budget.append(s.duration)
            elif s.duration_steps is not None:
                budget.append(s.duration_steps * self.f.dt)
            elif counted(s):
                budget.append(EVENT_SECONDS[s.core] * (s.count or 1))
            else:
                budget.append(None)
        fixed = sum(b for b in budget if b is not None)
        free = [i for i, b in enumerate(budget) if b is None]
        left = episode - fixed
        if (free and left / len(free) < MIN_PHASE_S) or left < 0:
            raise NotExpressible(
                f"its steps take longer than the {episode:g} s an episode of {self.env} lasts"
            )
        share = left / len(free) if free else 0.0
        ends, at = [], 0.0
        for b in budget:
            at += b if b is not None else share
            ends.append(round(at, 3))
        return ends

    def add(self, step: int, name: str, until: str | None = None, **edge: float) -> int:
        """Add a phase; its index."""
        self.phases.append(Phase(name, step, until, edge.get("above"), edge.get("below")))
        return len(self.phases) - 1

    def close(self, step: int) -> None:
        """End the step's last phase at its planned time (none for the last step)."""
        if step == len(self.steps) - 1:
            return
        last = self.phases[-1]
        if last.until is None:
            self.phases[-1] = replace(last, until="time", above=self.ends[step])


def gate(phases: tuple[int, ...]) -> str:
    """The factor that pays a term only in `phases` (reward code's `phase` is an int)."""
    return f"(phase == {phases[0]})" if len(phases) == 1 else f"(phase in {phases!r})"


class Gated:
    """Terms that pay in some phases only; one term per name and expression, its phases
    gathered ("squat 3 times" pays one squat term in three phases)."""

    def __init__(self) -> None:
        self.terms: dict[str, tuple[Term, list[int]]] = {}

    def add(self, t: Term, phases: tuple[int, ...]) -> str:
        """Gate `t` on `phases`; the name it is paid under."""
        name = t.name
        while name in self.terms and self.terms[name][0].call != t.call:
            name += "_"  # the same name for another expression: keep both
        if name in self.terms:
            self.terms[name][1].extend(p for p in phases if p not in self.terms[name][1])
        else:
            self.terms[name] = (replace(t, name=name), list(phases))
        return name

    def into(self, m: Builder) -> None:
        """Add the gated terms to the builder, each paid in its phases only."""
        for t, phases in self.terms.values():
            call = f"({t.call}) * {gate(tuple(sorted(phases)))}"
            m.term(t.name, call, t.weight, t.role, t.latex, t.meaning)

    def peak(self) -> float:
        """The most the gated terms pay in one phase (their weights summed)."""
        per: dict[int, float] = {}
        for t, phases in self.terms.values():
            for p in phases:
                per[p] = per.get(p, 0.0) + t.weight
        return max(per.values(), default=1.0)
