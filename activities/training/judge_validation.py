"""Whether judge code is accepted: decided on the trusted side from what it measured on the
validation episodes (activities/training/contrasts.py) and what the behaviour library measured
on the same episodes.

A judge is a measurement: it is sent back, naming the episode and both numbers, when

- its verdict (computed here with `judgment_from_code`, never its own score) passes an episode
  that does not meet the criteria: random actions, a fall, the body driven the opposite way,
  and zero actions where the library says they miss the criteria;
- or, on any episode, its answer cannot be trusted as a measurement (`problems`): a value the
  library measures differently, a criterion scored met while its measured value misses the
  target (or the reverse), an overall score unlike its criteria's.
"""

from __future__ import annotations

from typing import Any

from activities.behaviours.measured import judgment_from_code, problems
from workflows.contracts.judging import Criterion, CriterionScore
from workflows.verdict import meets, target_text

# Requests from before criteria came in full (names only): a judge whose own score on random
# actions reaches this would pass a policy that learned nothing.
RANDOM_PASS = 0.5
# The reasons one error quotes, at most (the fixer acts on the first ones).
MAX_REASONS = 3
MAX_ERROR_CHARS = 1800

MEASURE_THE_BODY = (
    "Measure each criterion on the whole episode from the body's state (qpos, qvel, the info_* "
    "fields, the primitives), as its measure says; never from reward, term_* or env_reward "
    "(what the policy was paid, not what it did) and never from the episode's length alone"
)


def is_contrast(episode: dict[str, Any], criteria: list[Criterion]) -> bool:
    """Whether the episode must not pass: random, short and opposite always; zero actions only
    where the library measured a criterion on it and found it missed."""
    kind = episode.get("contrast")
    if kind == "always":
        return True
    if kind != "unless_met":
        return False
    library: dict[str, float] = episode.get("library") or {}
    return any(c.name in library and not meets(library[c.name], c) for c in criteria)


def _value(s: CriterionScore) -> str:
    unit = f" {s.unit}" if s.unit else ""
    return f"{s.name} {s.value:.4g}{unit} (target {target_text(s)})"


def judge_problem(
    episodes: list[dict[str, Any]], criteria: list[Criterion], names: list[str] | None = None
) -> str | None:
    """Why the judge goes back to its author, in one line naming each episode it failed on
    (what it measured beside what the library measured); None when it is accepted. Callers
    say "sent back" before it.
    `episodes`: the validate_judge child's (name, what, contrast, judgment, library values);
    `criteria` in full, or empty for a request from before (then `names` only)."""
    if not criteria:
        return _names_only(episodes, names or [])
    passed: list[str] = []
    found: list[tuple[int, str]] = []
    for episode in episodes:
        answer, library = episode["judgment"], episode.get("library") or {}
        what = episode["what"]
        if is_contrast(episode, criteria):
            verdict = judgment_from_code(answer, criteria, library)
            if verdict.passed:
                values = ", ".join(_value(s) for s in verdict.criteria)
                passed.append(f"It passed {what}, which does not do the behaviour: {values}.")
        if wrong := problems(answer, criteria, library):
            # The opposite direction first: the episode that says most about a measure.
            first = 0 if str(episode.get("name", "")).startswith("opposite") else 1
            found.append((first, f"On {what}: {'; '.join(wrong)}."))
    reasons = passed + [text for _, text in sorted(found, key=lambda f: f[0])]
    if not reasons:
        return None
    shown = reasons[:MAX_REASONS]
    more = f" (And {len(reasons) - len(shown)} more episodes.)" if len(reasons) > len(shown) else ""
    text = f"{' '.join(shown)}{more} {MEASURE_THE_BODY}."
    return text[:MAX_ERROR_CHARS]


def _names_only(episodes: list[dict[str, Any]], names: list[str]) -> str | None:
    """A request from before criteria came in full: every criterion measured (the answer's
    check did that), and a judge's own score on random actions low."""
    first = episodes[0] if episodes else None
    if first is None:
        return None
    answer = first["judgment"]
    own = answer.get("score")
    if own is not None and own >= RANDOM_PASS:
        scores = ", ".join(f"{k} {v:.2f}" for k, v in answer["criteria"].items() if k in names)
        return (
            f"judge_fn scored {first['what']} {own:.2f} ({scores}), at or above {RANDOM_PASS}: "
            "it would pass a policy that learned nothing; measure the behaviour itself so that "
            "random actions score low"
        )
    return None
