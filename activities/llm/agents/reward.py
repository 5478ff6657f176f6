"""Reward agents: the author (K distinct candidates), the reviewer and the reviser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from activities.evidence import evidence_text, judgment_of
from activities.llm.agents.common import answer_text, ask, clean_code, render_prompt, require
from activities.llm.agents.context import (
    code_text,
    criteria_text,
    env_text,
    intent_text,
    join,
    lessons_text,
)
from activities.llm.agents.dialogue import Turn, take_turn, tool_budget_note
from activities.llm.agents.tool_specs import REVISER_TOOLS
from activities.llm.providers.base import Message, ToolSpec
from workflows.contracts.judging import Criterion, Judgment
from workflows.contracts.llm import ReviseRequest
from workflows.contracts.session import IterationRecord
from workflows.contracts.tools import MAX_TOOL_ROUNDS
from workflows.contracts.training import CONFIG_NAMES, TrainResult
from workflows.contracts.usage import LLMCall

_CODE_FIELDS: dict[str, Any] = {
    "code": {"type": "string", "description": "the whole Python module"},
    "latex": {"type": "string"},
    "terms": {"type": "array", "items": {"type": "string"}},
    "summary": {"type": "string", "description": "one line: what the reward pays for"},
}

# Written before the code (first in the schema, so models fill it first) and kept with it.
_DESIGN: dict[str, Any] = {
    "design": {
        "type": "string",
        "description": "before the code: the structure chosen (per-step, cumulative or phased) "
        "and why, what a policy maximising this reward would actually do and what stops its "
        "cheats, and which term serves each criterion",
    }
}

SUBMIT_REWARD = ToolSpec(
    name="submit_reward",
    description="Submit the reward function with its design.",
    input_schema={
        "type": "object",
        "properties": {**_DESIGN, **_CODE_FIELDS},
        "required": ["design", "code"],
    },
)

SUBMIT_REVIEW = ToolSpec(
    name="submit_review",
    description="Submit the review: LGTM, or CHANGES with corrected code.",
    input_schema={
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["LGTM", "CHANGES"]},
            "notes": {"type": "string"},
            **_CODE_FIELDS,
        },
        "required": ["verdict", "notes"],
    },
)

SUBMIT_REVISION = ToolSpec(
    name="submit_revision",
    description="Submit the diagnosis, the planned changes and the revised reward.",
    input_schema={
        "type": "object",
        "properties": {
            "diagnosis": {"type": "string"},
            "changes": {"type": "string"},
            **_DESIGN,
            "base_iteration": {
                "type": "integer",
                "description": "the iteration whose reward you revised (default: the last)",
            },
            "timesteps": {"type": "integer"},
            "config": {
                "type": "string",
                "enum": list(CONFIG_NAMES),
                "description": "PPO hyperparameter config for the next run (default: keep)",
            },
            **_CODE_FIELDS,
        },
        "required": ["diagnosis", "changes", "design", "code"],
    },
)


@dataclass(frozen=True)
class RewardCode:
    """A reward module as an agent submitted it, with its LaTeX, term names and summary."""

    code: str
    latex: str
    terms: list[str]
    summary: str
    design: str = ""

    @classmethod
    def from_args(cls, args: dict[str, Any], agent: str, design: bool = False) -> RewardCode:
        """From a submit tool's arguments; the code is required, the rest has defaults. With
        `design` (the author's and the reviser's answers) the design their tool requires is
        kept as a comment block heading the code, so whoever reads the module later (reviewer,
        fixer, reviser, a person) reads why it is built so. A model that answered in plain text
        (a local server without tool calls) may have none: its code is still taken, and the
        missing design logged."""
        code = clean_code(require(args, "code", str, agent))
        # Lines kept (a design has paragraphs and lists); cut only if it runs away.
        plan = str(args.get("design") or "").strip()[:MAX_DESIGN_CHARS] if design else ""
        if design and not plan:
            structlog.get_logger().warning("reward submitted without a design", agent=agent)
        if plan:
            # A revision of designed code may carry the old design: keep only the new one.
            code = design_comment(plan) + without_design(code)
        terms = args.get("terms")
        return cls(
            code=code,
            latex=str(args.get("latex") or ""),
            terms=[str(t) for t in terms] if isinstance(terms, list) else [],
            summary=answer_text(args, "summary", 300),
            design=plan,
        )


DESIGN_HEADER = "# Design (written before the code):"
MAX_DESIGN_CHARS = 4000


def design_comment(design: str) -> str:
    """A design as the comment block that heads its reward module."""
    lines = [f"# {line}".rstrip() for line in design.splitlines()]
    return "\n".join([DESIGN_HEADER, *lines, ""]) + "\n"


def without_design(code: str) -> str:
    """The code without the design block `design_comment` put at its head, if any."""
    if not code.startswith(DESIGN_HEADER):
        return code
    lines = code.splitlines(keepends=True)
    body = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "".join(lines[body:]).lstrip("\n")


def _system(name: str) -> str:
    return render_prompt(name, reward_contract=render_prompt("reward_contract"))


def author(
    prompt: str,
    env_id: str,
    criteria: list[Criterion],
    model: str,
    candidate: int = 0,
    candidates: int = 1,
    lessons: str = "",
) -> tuple[RewardCode, LLMCall]:
    """One reward candidate; candidates after the first are asked for a distinct design and
    sampled warmer. `lessons`: the lesson page of earlier sessions on this intent, if any."""
    diversity = ""
    if candidates > 1:
        # Candidates are trained side by side: each should bet on a different design.
        diversity = (
            f"# Candidate {candidate + 1} of {candidates}\n\nSeveral reward candidates are "
            "trained side by side. Make this one a distinct design (different shaping, terms or "
            "weights) from the obvious first attempt"
            + (" and from the other candidates." if candidate else ".")
        )
    answer = ask(
        "reward_author",
        model,
        system=_system("reward_author"),
        user=join(
            intent_text(prompt),
            env_text(env_id),
            criteria_text(criteria),
            lessons_text(lessons),
            diversity,
        ),
        tool=SUBMIT_REWARD,
        temperature=0.0 if candidate == 0 else 0.8,
        parse=lambda args: RewardCode.from_args(args, "reward_author", design=True),
    )
    code: RewardCode = answer.value
    return code, answer.call


@dataclass(frozen=True)
class Review:
    """The reviewer's verdict: notes, and corrected code unless the reward looked right."""

    notes: str
    corrected: RewardCode | None  # None: LGTM

    @property
    def lgtm(self) -> bool:
        """True when the reviewer left the code as it was."""
        return self.corrected is None


def review(
    prompt: str, env_id: str, criteria: list[Criterion], code: str, model: str
) -> tuple[Review, LLMCall]:
    """The reviewer's one look at authored reward code before it is trained."""
    answer = ask(
        "reviewer",
        model,
        system=_system("reviewer"),
        user=join(
            intent_text(prompt),
            env_text(env_id),
            criteria_text(criteria),
            code_text("Reward code to review", code),
        ),
        tool=SUBMIT_REVIEW,
        parse=_review_from,
    )
    verdict: Review = answer.value
    return verdict, answer.call


def _review_from(args: dict[str, Any]) -> Review:
    verdict = str(args.get("verdict", "")).strip().upper()
    notes = answer_text(args, "notes", 500)
    if verdict == "LGTM" or not args.get("code"):
        return Review(notes or "LGTM", None)
    return Review(notes, RewardCode.from_args(args, "reviewer"))


@dataclass(frozen=True)
class Revision:
    """The reviser's answer: new reward code, why, and what to train next (steps, base, config)."""

    reward: RewardCode
    diagnosis: str
    changes: str
    timesteps: int | None
    base_iteration: int | None = None
    config: str | None = None


def revision_opening(
    req: ReviseRequest, code: str, lessons: str = "", rows: list[dict[str, Any]] | None = None
) -> str:
    """The first user message of a revision: the last iteration's evidence in full (with its
    training's metrics `rows` as a checkpoint table), the rest of the session as a table the
    tools can open, and the lesson of earlier sessions."""
    last = req.iteration - 1
    return join(
        intent_text(req.prompt),
        env_text(req.env_id),
        criteria_text(req.criteria),
        code_text(f"Reward code trained in iteration {last} (the last)", code),
        evidence_text(
            f"Iteration {last}",
            last_judgment(req),
            rows or [],
            req.criteria,
            req.train.timesteps_budget or req.train.timesteps_done,
        ),
        training_text(req.train, req.timesteps, req.timesteps_cap, req.algo),
        history_text(req.history, req.best.iteration if req.best else None),
        feedback_text(req.feedback),
        lessons_text(lessons),
        f"You are writing the reward for iteration {req.iteration}. "
        + tool_budget_note(0, MAX_TOOL_ROUNDS),
    )


def last_judgment(req: ReviseRequest) -> Judgment:
    """The last iteration's judgment as its record keeps it (both judges merged), the same
    source read_judgment answers from; the request's own judgment when there is no record."""
    last = req.iteration - 1
    record = next((r for r in req.history if r.iteration == last), None)
    return judgment_of(record, req.judgment) if record is not None else req.judgment


def revise_turn(model: str, messages: list[Message], final: bool) -> Turn:
    """One call of the reviser, with its lookup tools unless it must submit now."""
    return take_turn(
        "reviser",
        model,
        system=_system("reviser"),
        messages=messages,
        tools=REVISER_TOOLS,
        submit=SUBMIT_REVISION,
        final=final,
        parse=_has_code,
    )


def _has_code(args: dict[str, Any]) -> dict[str, Any]:
    """A revision's arguments, once they hold code (else the model is told so)."""
    require(args, "code", str, "reviser")
    return args


def revision_from(args: dict[str, Any], iterations: list[int], algo: str) -> Revision:
    """The submitted revision; a base or config outside what the session has is dropped."""
    steps = args.get("timesteps")
    base = args.get("base_iteration")
    config = args.get("config")
    return Revision(
        reward=RewardCode.from_args(args, "reviser", design=True),
        diagnosis=answer_text(args, "diagnosis", 600),
        changes=answer_text(args, "changes", 600),
        timesteps=int(steps) if isinstance(steps, int | float) and steps > 0 else None,
        base_iteration=int(base) if isinstance(base, int | float) and base in iterations else None,
        config=config if config in CONFIG_NAMES and algo == "ppo" else None,
    )


def history_text(history: list[IterationRecord], best: int | None) -> str:
    """The session's iterations as a table (empty with nothing to compare), with a hint to rebase
    on the best one."""
    if len(history) < 2 and best is None:
        return ""
    lines = [
        "# The session so far (open any iteration with the tools)",
        "",
        "| iteration | score | passed | failure tags | config | reward | what the reviser changed "
        "| people said |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in history:
        cells = [
            str(r.iteration),
            f"{r.score:.2f}",
            "yes" if r.passed else "no",
            ", ".join(r.failure_tags) or "-",
            r.config,
            r.reward_summary or "-",
            (r.changes or "-")[:200],
            "; ".join(r.feedback)[:200] or "-",
        ]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    if best is not None:
        lines.append(
            f"\nIteration {best} scored best so far, better than the last. You may revise its "
            "reward instead of the last one's (read it with read_reward): say so in "
            "base_iteration."
        )
    return "\n".join(lines)


def feedback_text(feedback: list[str]) -> str:
    """What the person watching said, for the reviser to act on (empty if nothing)."""
    if not feedback:
        return ""
    said = "\n".join(f"- {line}" for line in feedback)
    return f"# What the person watching this session asked for (act on it)\n\n{said}"


def training_text(t: TrainResult, timesteps: int, cap: int, algo: str = "ppo") -> str:
    """How training went (steps, returns, per-term means, still rising or not), for the reviser."""
    means = ", ".join(f"{k} {v:+.3g}" for k, v in sorted(t.term_means.items()))
    ret = f"{t.mean_episode_return:.1f}" if t.mean_episode_return is not None else "-"
    env_ret = f"{t.mean_env_return:.1f}" if t.mean_env_return is not None else "-"
    return (
        f"# Training\n\n{t.timesteps_done:,} steps of {algo.upper()} ({timesteps:,} asked; "
        f"the next iteration may use up to {cap:,}). Mean episode return {ret} under this reward, "
        f"{env_ret} under the env's own reward. Per-step mean of each term: {means or '-'}. "
        + (
            "Returns were still rising at the end."
            if t.still_improving
            else "Returns had levelled off by the end."
        )
    )
