"""The evidence of a judged iteration as agents read it, from one source: the verdict, each
criterion (measured values labelled measured, the video judge's verdicts labelled verdicts) and
how training went at each checkpoint. The reviser's opening and its read_judgment tool both
print it, so they never disagree."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from activities.artifacts import ArtifactStore
from workflows.contracts.judging import Criterion, CriterionScore, Judgment
from workflows.contracts.keys import SCALARS
from workflows.contracts.session import IterationRecord
from workflows.verdict import DIRECTION_WORDS, heading


def metrics_rows(store: ArtifactStore, prefix: str) -> list[dict[str, Any]]:
    """A run's metrics lines (one per update), for a checkpoint table; none when it wrote
    none."""
    key = prefix + SCALARS
    if not store.exists(key):
        return []
    rows = [json.loads(line) for line in store.get_text(key).splitlines() if line.strip()]
    return [r for r in rows if isinstance(r, dict) and isinstance(r.get("timesteps"), int)]


def judgment_of(record: IterationRecord, code: Judgment) -> Judgment:
    """An iteration's judgment as its record keeps it (the code judge's and the video judge's
    merged: verdict, score, criteria, tags), with the code judge's checkpoints."""
    return Judgment(
        score=record.score,
        passed=record.passed,
        diagnosis=record.diagnosis,
        criteria=_criteria(record, code),
        failure_tags=list(record.failure_tags),
        code_score=record.code_score,
        visual_score=record.visual_score,
        checkpoints=dict(code.checkpoints),
        checkpoint_measured=dict(code.checkpoint_measured),
        video_note=record.video_note,
    )


def _criteria(record: IterationRecord, code: Judgment) -> list[CriterionScore]:
    """The record's measured criteria and verdicts; a record from before it kept them falls
    back on the judgment's."""
    kept = [
        [c for c in source if (c.metric == "vlm") == visual]
        for visual in (False, True)
        for source in (record.criteria,)
    ]
    measured = kept[0] or [c for c in code.criteria if c.metric != "vlm"]
    verdicts = kept[1] or [c for c in code.criteria if c.metric == "vlm"]
    return [*measured, *verdicts]


def judgment_text(j: Judgment, title: str = "Judgment") -> str:
    """A judgment (verdict, score, diagnosis, each criterion) for an agent to reason about."""
    lines = [heading(title, j.passed, j.score, j.criteria), j.diagnosis]
    lines += [c.line() for c in j.criteria]
    if j.video_note:
        lines.append(j.video_note)
    if j.failure_tags:
        lines.append("Failure tags: " + ", ".join(j.failure_tags))
    return "\n".join(lines)


def evidence_text(
    title: str,
    judgment: Judgment,
    rows: list[dict[str, Any]],
    criteria: Sequence[Criterion | CriterionScore],
    budget: int,
) -> str:
    """The judgment and its checkpoint table: what the reviser reads about an iteration."""
    table = checkpoint_table(rows, judgment, criteria, budget)
    return judgment_text(judgment, title) + ("\n\n" + table if table else "")


CHECKPOINT_ROWS = 5  # rows of the table when the judge scored no checkpoints

READING_RULES = """How to read it:
- Return rising while the judge's score and the measured values stay flat: the reward pays for
  something the criteria do not measure (a hack or a proxy); change what it pays for.
- Episode length falling, or short next to the env's limit: the body falls or the episode ends
  early; pay for staying up or shape termination before paying for speed.
- A term whose magnitude dwarfs the others decides what is learned; rescale it.
- Measured values that improve and then fall back late in training: the policy drifts away from
  the behaviour; strengthen the term that held it.
- Nothing moving at all: the reward gives no gradient toward the behaviour from where a random
  policy starts; add a dense, bounded term for the first step of it."""


def checkpoint_table(
    rows: list[dict[str, Any]],
    judgment: Judgment,
    criteria: Sequence[Criterion | CriterionScore],
    budget: int,
) -> str:
    """How a training went over time: at each evaluation checkpoint the judge scored (else at
    about CHECKPOINT_ROWS points), the return, episode length and each term's mean from the
    metrics nearest it, with the judge's score and each criterion's measured value against
    its target (the video judge's verdicts are not measurements and are not in it)."""
    if not rows:
        return ""
    if judgment.checkpoints:
        points = [(pct, int(pct) * budget / 100) for pct in judgment.checkpoints]
    else:
        step = max(1, len(rows) // CHECKPOINT_ROWS)
        picked = rows[step - 1 :: step][-CHECKPOINT_ROWS:]
        points = [(f"{100 * r['timesteps'] / max(budget, 1):.0f}", r["timesteps"]) for r in picked]
    terms = sorted({k for r in rows for k in r if k.startswith("term_")})
    names = [c.name for c in criteria]
    units = {c.name: f" ({c.unit})" if c.unit else "" for c in criteria}
    targets = {c.name: _target(c) for c in criteria}
    head = ["% of budget", "steps", "return", "episode length", *terms, "judge score"]
    head += [f"{n} measured{units[n]} (target {targets[n]})" for n in names]
    lines = [
        "# Training over time (its best run; measured values at each checkpoint)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + " --- |" * len(head),
    ]
    for pct, at in points:
        row = min(rows, key=lambda r: abs(r["timesteps"] - at))
        measured = judgment.checkpoint_measured.get(pct, {})
        score = judgment.checkpoints.get(pct)
        cells = [
            f"{pct}%",
            f"{row['timesteps']:,}",
            _num(row.get("ep_return_mean")),
            _num(row.get("ep_len_mean")),
            *(_num(row.get(term)) for term in terms),
            _num(score),
            *(_num(measured.get(n)) for n in names),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + READING_RULES


def _num(value: Any) -> str:
    return "-" if value is None else f"{float(value):.4g}"


def _target(c: Criterion | CriterionScore) -> str:
    unit = f" {c.unit}" if c.unit else ""
    near = f" ± {c.tolerance:g}" if c.direction == "near" and c.tolerance else ""
    return f"{DIRECTION_WORDS.get(c.direction, c.direction)} {c.target:g}{near}{unit}"
