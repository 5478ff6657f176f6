"""Composing a reward and its criteria from the behaviour library, for a read intent.

Each core behaviour contributes its task terms (cores.py), each qualifier and pose its own terms
and criteria (poses.py): "without falling" adds an upright term and a survival criterion, "in
place" a position-hold term and a distance criterion, "arms out to the sides" a hand-spread term
and its criterion. Every term is a bounded primitive reward form in [0, 1] times a weight (costs
aside), so a weight reads as "how much this part counts"; a constant survival term is kept below
the behaviour's own weights, so standing still never pays more than doing the behaviour. Each
criterion names the terms that serve it: the reviser raises those when it fails. Steps done one
after another become phases (phased.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import activities.llm.offline.behaviours.library as lib
from activities.behaviours.layout import FREE, PLANAR, SWIMMER, layout
from activities.envs.catalog import facts
from activities.llm.offline.behaviours.measures import Measure
from activities.llm.offline.reading.reader import Parsed
from activities.llm.offline.reading.steps import Step
from workflows.contracts.judging import Criterion

# How a refusal names a qualifier it could not apply.
QUALIFIER_WORDS = {
    "no_fall": "without falling",
    "whole_episode": "for the whole episode",
    "from_ground": "from the ground",
    "in_place": "in place",
    "still": "still",
    "stay": "stay there",
    "ccw": "counter-clockwise",
    "cw": "clockwise",
    "circle": "in a circle",
    "high_knees": "high knees",
    "upright": "upright",
    "no_backward": "without going backward",
    "straight": "in a straight line",
    "no_turn": "without turning",
    "centered": "in the middle",
}
# A survival bonus may pay at most this share of the task terms' summed weight per step.
ALIVE_SHARE = 0.25
TASK, QUALIFIER, PENALTY, BONUS, PROGRESS = "task", "qualifier", "penalty", "bonus", "progress"
MAX_CRITERIA = 8  # the elicitor asks for 3-8; more only dilutes the score
Direction = Literal["at_least", "at_most", "near"]


@dataclass(frozen=True)
class Term:
    """One reward term: `weight * <call>` (a cost is subtracted)."""

    name: str
    call: str  # a primitives expression over ENV, info, action (and `phase`, in a phased reward)
    weight: float
    role: str  # TASK, QUALIFIER, PENALTY, BONUS or PROGRESS
    latex: str  # the term's symbol in the formula
    meaning: str  # what it rewards, for the summary


@dataclass(frozen=True)
class Composition:
    """A composed reward: its terms, its criteria and which terms serve each criterion; the
    judge measures of criteria the built-in judge cannot measure, the phase each criterion is
    judged in, and the SHAPING the reward declares."""

    core: str
    terms: tuple[Term, ...]
    criteria: tuple[Criterion, ...]
    serves: dict[str, tuple[str, ...]]
    notes: tuple[str, ...] = field(default_factory=tuple)
    measures: dict[str, Measure] = field(default_factory=dict)
    windows: dict[str, tuple[int, ...]] = field(default_factory=dict)
    shaping: dict[str, Any] = field(default_factory=dict)
    phase_times: tuple[float | None, ...] = ()
    unmeasured: tuple[str, ...] = ()

    @property
    def needs_judge(self) -> bool:
        """Whether a criterion needs judge code (the built-in metrics cannot measure it)."""
        return any(c.metric is None for c in self.criteria) or bool(self.windows)

    def weights(self) -> dict[str, float]:
        """The revisable parameters: one weight per term, keyed `<term>_weight`."""
        return {f"{t.name}_weight": t.weight for t in self.terms}

    def with_weights(self, params: dict[str, float]) -> Composition:
        """The same composition with the weights a revision chose."""
        terms = tuple(
            replace(t, weight=params.get(f"{t.name}_weight", t.weight)) for t in self.terms
        )
        return replace(self, terms=terms)


class Builder:
    """Collects terms, criteria and notes while one step is composed."""

    def __init__(self, env_id: str, step: Step, unused: tuple[str, ...] = ()) -> None:
        self.env = env_id
        self.r = step
        self.f = facts(env_id)
        self.lay = layout(env_id)
        self.unused = unused
        self.terms: list[Term] = []
        self.criteria: list[Criterion] = []
        self.serves: dict[str, tuple[str, ...]] = {}
        self.notes: list[str] = []
        self.used: set[str] = set()
        # Qualifiers read that no part of the composition applies: listed as not measured.
        self.not_applied: list[str] = []
        self.measures: dict[str, Measure] = {}
        self.windows: dict[str, tuple[int, ...]] = {}  # criterion -> the phases it is judged in
        self.shaping: dict[str, Any] = {}
        # A step of a sequence: its duration is its phase's length, not a survival bar.
        self.in_sequence = False
        # Factors on a phased reward's progress floor (a flip's: not turned the wrong way).
        self.progress_factors: list[str] = []

    def term(
        self, name: str, call: str, weight: float, role: str, latex: str, meaning: str
    ) -> None:
        """Add a term (a later term of the same name replaces it). A term paying for where the
        body is shows the policy its position (SHAPING `position`): the env hides it."""
        self.terms = [t for t in self.terms if t.name != name]
        self.terms.append(Term(name, call, round(weight, 4), role, latex, meaning))
        if "P.position" in call and self.lay.root in (PLANAR, FREE, SWIMMER):
            self.shape(
                f"{self.env} leaves the body's x, y position out of the policy's observation: "
                "SHAPING position shows it, since the reward pays for where the body is",
                position=True,
            )

    def crit(self, criterion: Criterion, *terms: str, measure: Measure | None = None) -> None:
        """Add a criterion served by `terms`; `measure` where only judge code measures it."""
        if any(c.name == criterion.name for c in self.criteria):
            return
        if measure is not None:
            criterion = criterion.model_copy(
                update={"metric": None, "measure": measure.label, "unit": measure.unit}
            )
            self.measures[criterion.name] = measure
        self.criteria.append(criterion)
        self.serves[criterion.name] = terms

    def has(self, name: str) -> bool:
        """Whether the step holds the qualifier (which counts it as used)."""
        self.used.add(name)
        return name in self.r.qualifiers

    def shape(self, note: str, **shaping: Any) -> None:
        """Declare SHAPING for the reward (and say why in the summary)."""
        self.shaping.update(shaping)
        if note not in self.notes:
            self.notes.append(note)

    # --- shared pieces ------------------------------------------------------------------------

    def upright(self, weight: float, strict: bool, judged: float = 1.0) -> None:
        """An upright term for bodies that can fall or flip; a criterion (of weight `judged`)
        when `strict` or the body can flip over without the episode ending."""
        if self.lay.root not in (PLANAR, FREE):
            return
        self.term(
            "upright", "P.upright_reward(ENV, info)", weight, QUALIFIER, "u_t", "upright torso"
        )
        if strict or self.env in lib.FLIPPABLE:
            self.crit(
                lib.crit(
                    "stays_upright",
                    "torso upright on average",
                    "mean_uprightness",
                    0.8,
                    weight=judged,
                ),
                "upright",
            )

    def survival(self, bar: float, description: str) -> None:
        """A survival criterion (envs that end an episode on a fall)."""
        if not self.f.terminates:
            return
        self.crit(
            lib.crit("stays_healthy", description, "alive_fraction", bar, weight=2.0), "alive"
        )

    def falls(self) -> None:
        """The survival bar the step's qualifiers ask for ("without falling", "for the whole
        episode", "for 5 seconds")."""
        episode = self.f.max_episode_steps * self.f.dt
        held = None if self.in_sequence else duration_s(self.r, self.env)
        if self.has("whole_episode"):
            self.survival(0.99, "stays up for the whole episode")
        elif self.has("no_fall"):
            self.survival(0.95, "does not fall: survives at least 95% of the episode")
            if not self.f.terminates and self.lay.root in (PLANAR, FREE):
                self.notes.append(
                    f"{self.env} never ends an episode on a fall: 'without falling' is read as "
                    "staying upright"
                )
        elif held is not None and self.f.terminates:
            share = min(0.99, held / episode)
            self.survival(
                share, f"keeps it up for at least {held:g} s ({share:.0%} of the episode)"
            )
        if held is not None and held > episode:
            self.notes.append(
                f"an episode of {self.env} lasts {episode:g} s, less than the {held:g} s asked "
                "for: judged over the whole episode"
            )

    def check_used(self) -> None:
        """List a qualifier no part of the composition applied as not measured: the reading
        says so rather than quietly serving a different request."""
        for q in sorted(self.r.qualifiers - self.used):
            said = f"'{QUALIFIER_WORDS.get(q, q)}' (does not apply to {self.r.core} on {self.env})"
            if said not in self.not_applied:
                self.not_applied.append(said)

    def finish(self, natural: bool = False) -> None:
        """The survival bonus, the control cost and the notes every composition ends with."""
        if self.f.terminates:
            task = sum(t.weight for t in self.terms if t.role in (TASK, QUALIFIER))
            self.term("alive", "1.0", ALIVE_SHARE * task, BONUS, "1", "per step the episode lasts")
            if not any(c.metric == "alive_fraction" for c in self.criteria):
                self.survival(0.9, "does not fall: survives at least 90% of the episode")
        if self.f.ctrl_cost_weight > 0:
            w = self.f.ctrl_cost_weight * (2.0 if natural else 1.0)
            self.term("ctrl", "P.control_cost(action)", w, PENALTY, r"\lVert a_t \rVert^2", "")
        if natural:
            self.notes.append(
                "'natural' is read as smooth, energy-efficient motion (a doubled control cost)"
            )
        if self.unused:
            self.notes.append(f"words not used: {', '.join(self.unused)}")

    def composition(self, core: str, parsed: Parsed) -> Composition:
        """What was built, with the most important criteria first."""
        ranked = sorted(self.criteria, key=lambda c: -c.weight)[:MAX_CRITERIA]
        kept = [c for c in self.criteria if c in ranked]
        # A criterion over the limit is still rewarded, but not judged: the reading says so.
        dropped = [
            f"{c.description} (not judged: at most {MAX_CRITERIA} criteria)"
            for c in self.criteria
            if c not in ranked
        ]
        return Composition(
            core,
            tuple(self.terms),
            tuple(kept),
            self.serves,
            tuple(dict.fromkeys([*parsed.notes, *self.notes])),
            {k: v for k, v in self.measures.items() if any(c.name == k for c in kept)},
            shaping=dict(self.shaping),
            unmeasured=tuple(dict.fromkeys([*parsed.unmeasured, *self.not_applied, *dropped])),
        )


def duration_s(step: Step, env_id: str) -> float | None:
    """The seconds a step says it lasts ("for 3 seconds", "for 200 steps"), or None."""
    if step.duration is not None:
        return step.duration
    if step.duration_steps is not None:
        return step.duration_steps * facts(env_id).dt
    return None
