"""Reward agents: the author (K distinct candidates), the reviewer and the reviser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from activities.llm.agents.common import ask, clean_code, render_prompt, require
from activities.llm.agents.context import code_text, criteria_text, env_text, intent_text, join
from activities.llm.providers.base import ToolSpec
from workflows.models import Criterion, Judgment, LLMCall, TrainResult

_CODE_FIELDS: dict[str, Any] = {
    "code": {"type": "string", "description": "the whole Python module"},
    "latex": {"type": "string"},
    "terms": {"type": "array", "items": {"type": "string"}},
    "summary": {"type": "string", "description": "one line: what the reward pays for"},
}

SUBMIT_REWARD = ToolSpec(
    name="submit_reward",
    description="Submit the reward function.",
    input_schema={"type": "object", "properties": _CODE_FIELDS, "required": ["code"]},
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
            "timesteps": {"type": "integer"},
            **_CODE_FIELDS,
        },
        "required": ["diagnosis", "changes", "code"],
    },
)


@dataclass(frozen=True)
class RewardCode:
    code: str
    latex: str
    terms: list[str]
    summary: str

    @classmethod
    def from_args(cls, args: dict[str, Any], agent: str) -> RewardCode:
        code = clean_code(require(args, "code", str, agent))
        terms = args.get("terms")
        return cls(
            code=code,
            latex=str(args.get("latex") or ""),
            terms=[str(t) for t in terms] if isinstance(terms, list) else [],
            summary=" ".join(str(args.get("summary") or "").split())[:300],
        )


def _system(name: str) -> str:
    return render_prompt(name, reward_contract=render_prompt("reward_contract"))


def author(
    prompt: str,
    env_id: str,
    criteria: list[Criterion],
    model: str,
    candidate: int = 0,
    candidates: int = 1,
) -> tuple[RewardCode, LLMCall]:
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
        user=join(intent_text(prompt), env_text(env_id), criteria_text(criteria), diversity),
        tool=SUBMIT_REWARD,
        temperature=0.0 if candidate == 0 else 0.8,
    )
    return RewardCode.from_args(answer.arguments, "reward_author"), answer.call


@dataclass(frozen=True)
class Review:
    lgtm: bool
    notes: str
    corrected: RewardCode | None


def review(
    prompt: str, env_id: str, criteria: list[Criterion], code: str, model: str
) -> tuple[Review, LLMCall]:
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
    )
    args = answer.arguments
    verdict = str(args.get("verdict", "")).strip().upper()
    notes = " ".join(str(args.get("notes") or "").split())[:500]
    if verdict == "LGTM" or not args.get("code"):
        return Review(True, notes or "LGTM", None), answer.call
    return Review(False, notes, RewardCode.from_args(args, "reviewer")), answer.call


@dataclass(frozen=True)
class Revision:
    reward: RewardCode
    diagnosis: str
    changes: str
    timesteps: int | None


def revise(
    prompt: str,
    env_id: str,
    criteria: list[Criterion],
    code: str,
    judgment: Judgment,
    train: TrainResult,
    timesteps: int,
    timesteps_cap: int,
    model: str,
    feedback: list[str] | None = None,
) -> tuple[Revision, LLMCall]:
    answer = ask(
        "reviser",
        model,
        system=_system("reviser"),
        user=join(
            intent_text(prompt),
            env_text(env_id),
            criteria_text(criteria),
            code_text("Reward code trained", code),
            judgment_text(judgment),
            training_text(train, timesteps, timesteps_cap),
            feedback_text(feedback or []),
        ),
        tool=SUBMIT_REVISION,
    )
    args = answer.arguments
    steps = args.get("timesteps")
    return (
        Revision(
            reward=RewardCode.from_args(args, "reviser"),
            diagnosis=" ".join(str(args.get("diagnosis") or "").split())[:600],
            changes=" ".join(str(args.get("changes") or "").split())[:600],
            timesteps=int(steps) if isinstance(steps, int | float) and steps > 0 else None,
        ),
        answer.call,
    )


def feedback_text(feedback: list[str]) -> str:
    if not feedback:
        return ""
    said = "\n".join(f"- {line}" for line in feedback)
    return f"# What the person watching this session asked for (act on it)\n\n{said}"


def judgment_text(j: Judgment) -> str:
    lines = [f"# Judgment: score {j.score:.2f}, {'passed' if j.passed else 'not passed'}"]
    lines.append(j.diagnosis)
    for c in j.criteria:
        lines.append(
            f"- {c.name}: measured {c.value:g}, target {c.direction} {c.target:g}, "
            f"score {c.score:.2f}"
        )
    if j.failure_tags:
        lines.append("Failure tags: " + ", ".join(j.failure_tags))
    return "\n".join(lines)


def training_text(t: TrainResult, timesteps: int, cap: int) -> str:
    means = ", ".join(f"{k} {v:+.3g}" for k, v in sorted(t.term_means.items()))
    ret = f"{t.mean_episode_return:.1f}" if t.mean_episode_return is not None else "-"
    env_ret = f"{t.mean_env_return:.1f}" if t.mean_env_return is not None else "-"
    return (
        f"# Training\n\n{t.timesteps_done:,} steps of PPO ({timesteps:,} asked; the next "
        f"iteration may use up to {cap:,}). Mean episode return {ret} under this reward, "
        f"{env_ret} under the env's own reward. Per-step mean of each term: {means or '-'}. "
        + (
            "Returns were still rising at the end."
            if t.still_improving
            else "Returns had levelled off by the end."
        )
    )
