"""Lessons across sessions: one markdown page per environment and behaviour, in S3.

After each session, `record` distills what worked and what failed (reward terms and weights,
budget, config, failure tags, scores) into `lessons/<env>/<behaviour>.md`. Authors and revisers
of later sessions on the same intent read it before they write: language models get the page as
text, the offline author starts from the weights of the best passing entry. A person can edit the
page (the prose, the "Notes" section, or the entries in its `policyforge-lesson` block) or delete
it; a new session keeps the notes and adds its entry.

The behaviour key is the intent's content words, stemmed and in order ("run forward as fast as
possible" -> `run-forward-fast`), so the same intent, however it is padded, finds the same page.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from activities.artifacts import ArtifactStore
from activities.logs import activity_logger
from workflows.contracts.activities import RECORD_LESSON, implements
from workflows.contracts.keys import LESSONS, lesson_key
from workflows.contracts.lessons import LessonRequest
from workflows.verdict import record_verdict

BLOCK = "policyforge-lesson"  # the fenced block that holds the entries as JSON
NOTES = "## Notes"
MAX_ENTRIES = 20  # the newest sessions; older ones fall off the page
# Words that change nothing about a behaviour.
_STOP_WORDS = """
    a an the to and then of in on at as with its it itself while please should must learn make
    let try be is are can could will would so that possible way manner do does doing perform
    performing robot agent policy very really much more most just i you we want like
"""
_STOP = frozenset(_STOP_WORDS.split())


class Entry(BaseModel):
    """One session's contribution to a lesson."""

    model_config = ConfigDict(extra="ignore")

    session_id: str
    prompt: str
    model: str
    status: str
    passed: bool
    best_score: float | None = None
    best_iteration: int | None = None
    iterations: int = 0
    timesteps: int  # the budget of the best iteration
    config: str = "default"
    algo: str = "ppo"
    template: str | None = None  # offline rewards: the template and its parameters
    params: dict[str, float] = {}
    terms: list[str] = []
    term_means: dict[str, float] = {}
    latex: str = ""
    # The best iteration's reward module in S3 (its code and SHAPING), for the authors.
    reward_key: str = ""
    # One line per iteration: score, failure tags, what changed.
    history: list[str] = []


@dataclass
class Lesson:
    """A lesson page: its entries and a person's notes."""

    env_id: str
    behaviour: str
    entries: list[Entry] = field(default_factory=list)
    notes: str = ""

    @property
    def key(self) -> str:
        """Where the page lives in S3."""
        return lesson_key(self.env_id, self.behaviour)

    def best_pass(self, template: str | None = None) -> Entry | None:
        """The highest-scoring passing entry (of `template`, where given), newest on a tie."""
        passing = [
            e for e in self.entries if e.passed and (template is None or e.template == template)
        ]
        if not passing:
            return None
        return max(reversed(passing), key=lambda e: e.best_score or 0.0)


def _stem(word: str) -> str:
    """A light stem, so that 'running forwards' and 'run forward' share a page."""
    if word.endswith("ing") and len(word) > 5:
        base = word[:-3]
        if base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]  # running -> run; falling stays fall
        return base
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def behaviour_key(prompt: str) -> str:
    """The lesson key of an intent: its content words, stemmed, in order, deduplicated."""
    text = prompt.lower().replace("m/s", " mps ")
    words = re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.replace("-", " "))
    kept = dict.fromkeys(_stem(w) for w in words if w not in _STOP)
    key = "-".join(kept)[:80].strip("-")
    return key or "unnamed"


# --- the page ---------------------------------------------------------------------------------


def render(lesson: Lesson) -> str:
    """The lesson as markdown: a summary a person and a model can read, the notes, then the
    entries as JSON in a fenced block."""
    passed = [e for e in lesson.entries if e.passed]
    lines = [
        f"# Lesson: {lesson.behaviour} on {lesson.env_id}",
        "",
        f"{len(lesson.entries)} session(s), {len(passed)} passed.",
        "",
    ]
    best = lesson.best_pass()
    if best is not None:
        lines += ["## What worked", "", *_entry_lines(best), ""]
    failed = [e for e in lesson.entries if not e.passed]
    tries = [line for e in lesson.entries for line in e.history if not _passed_line(line)]
    if failed or tries:
        lines += ["## What failed", ""]
        lines += [f"- {line}" for line in tries[-8:]]
        lines.append("")
    lines += [NOTES, "", lesson.notes.strip() or "(none yet: add yours here)", ""]
    body = json.dumps([e.model_dump() for e in lesson.entries], indent=1)
    lines += [f"```{BLOCK}", body, "```", ""]
    return "\n".join(lines)


def _passed_line(line: str) -> bool:
    """Whether a history line is a passing iteration's (older pages said "(passed)")."""
    return ": passed (" in line or "(passed)" in line


def _entry_lines(e: Entry) -> list[str]:
    weights = ", ".join(f"{k} {v:g}" for k, v in e.params.items() if not k.startswith("q_"))
    means = ", ".join(f"{k} {v:.3g}" for k, v in e.term_means.items())
    out = [
        f"- Session `{e.session_id}` ({e.model}) passed at iteration {e.best_iteration} with "
        f"score {e.best_score:.2f}, {e.timesteps:,} steps per run, {e.algo} config "
        f"`{e.config}`.",
        f"- Reward: ${e.latex}$" if e.latex else "",
        f"- Reward template `{e.template}` with {weights}." if e.template else "",
        f"- Per-step term means in training: {means}." if means else "",
    ]
    out += [f"- {line}" for line in e.history]
    return [line for line in out if line]


# The passing reward's module shown to authors, at most this long (a module is a few KB).
MAX_LESSON_CODE = 8000


def text_for_authors(lesson: Lesson, store: ArtifactStore | None = None) -> str:
    """What the agents that write criteria or code read: the page without its JSON block and,
    when `store` still has it, the module of the best passing reward (its code and SHAPING)."""
    text = render(lesson).split(f"```{BLOCK}")[0].rstrip() + "\n"
    best = lesson.best_pass()
    if store is None or best is None or not best.reward_key or not store.exists(best.reward_key):
        return text
    code = store.get_text(best.reward_key)
    if len(code) > MAX_LESSON_CODE:
        code = code[:MAX_LESSON_CODE] + "\n# [... cut]"
    return (
        f"{text}\n## The reward that passed (session `{best.session_id}`, iteration "
        f"{best.best_iteration}), with its SHAPING\n\n```python\n{code.rstrip()}\n```\n"
    )


class LessonFormatError(ValueError):
    """A lesson page a person edited so that its entries no longer read."""


def parse(env_id: str, behaviour: str, text: str) -> Lesson:
    """A page back into a lesson; LessonFormatError (one line) when its block does not read."""
    notes = ""
    if NOTES in text:
        after = text.split(NOTES, 1)[1]
        notes = after.split(f"```{BLOCK}")[0].strip()
        if notes.startswith("(none yet"):
            notes = ""
    found = re.search(rf"```{BLOCK}\n(.*?)\n```", text, re.S)
    entries: list[Entry] = []
    if found:
        try:
            raw = json.loads(found.group(1))
            entries = [Entry.model_validate(item) for item in raw]
        except (json.JSONDecodeError, ValidationError, TypeError) as exc:
            first = str(exc).splitlines()[0]
            raise LessonFormatError(
                f"lesson {env_id}/{behaviour}: the {BLOCK} block does not read ({first}); fix "
                "or delete it"
            ) from None
    return Lesson(env_id, behaviour, entries, notes)


# --- S3 ---------------------------------------------------------------------------------------


def load(store: ArtifactStore, env_id: str, prompt: str) -> Lesson | None:
    """The lesson for an intent on an env, or None when no session left one (or it does not
    read: a broken page never stops a session)."""
    behaviour = behaviour_key(prompt)
    key = lesson_key(env_id, behaviour)
    if not store.exists(key):
        return None
    try:
        return parse(env_id, behaviour, store.get_text(key))
    except LessonFormatError:
        return None


def entry_of(req: LessonRequest) -> Entry:
    """The session's entry: its outcome and its best iteration's reward, budget and config."""
    best = req.best
    record = max(req.iterations, key=lambda r: (r.passed, r.score)) if req.iterations else None
    history = [
        # The verdict by the numbers ("not passed: forward speed 1.74 m/s, target at least
        # 2.00 m/s"), then the score as progress.
        f"iteration {r.iteration}: {record_verdict(r)} (score {r.score:.2f})"
        + (f", {', '.join(r.failure_tags[:4])}" if r.failure_tags else "")
        + f", {r.timesteps:,} steps"
        + (f"; changed: {r.changes[:160]}" if r.changes else "")
        for r in req.iterations
    ]
    reward: Any = best.reward if best else None
    return Entry(
        session_id=req.session_id,
        prompt=req.prompt,
        model=req.llm_model,
        status=req.status,
        passed=req.status == "passed",
        best_score=record.score if record else None,
        best_iteration=record.iteration if record else None,
        iterations=len(req.iterations),
        timesteps=record.timesteps if record else req.total_timesteps,
        config=record.config if record else "default",
        algo=req.algo,
        template=reward.template if reward else None,
        params=dict(reward.params) if reward else {},
        terms=list(reward.terms) if reward else [],
        term_means={k: round(v, 4) for k, v in best.train.term_means.items()} if best else {},
        latex=record.latex if record else "",
        reward_key=reward.key if reward else "",
        history=history,
    )


def record(store: ArtifactStore, req: LessonRequest) -> str:
    """Add the session's entry to its lesson page (made when missing); returns the key. A
    session recorded again (a retried activity) replaces its own entry."""
    behaviour = behaviour_key(req.prompt)
    key = lesson_key(req.env_id, behaviour)
    lesson = Lesson(req.env_id, behaviour)
    if store.exists(key):
        try:
            lesson = parse(req.env_id, behaviour, store.get_text(key))
        except LessonFormatError:
            # A person broke the block: keep their page aside rather than lose it.
            store.put_text(key + ".unreadable", store.get_text(key))
    entries = [e for e in lesson.entries if e.session_id != req.session_id]
    lesson.entries = [*entries, entry_of(req)][-MAX_ENTRIES:]
    return store.put_text(key, render(lesson))


def list_lessons(store: ArtifactStore) -> list[tuple[str, str]]:
    """Every lesson as (env_id, behaviour), sorted."""
    out = []
    for key in store.list_keys(LESSONS):
        parts = key[len(LESSONS) :].split("/")
        if len(parts) == 2 and parts[1].endswith(".md"):
            out.append((parts[0], parts[1].removesuffix(".md")))
    return sorted(out)


@implements(RECORD_LESSON)
def record_lesson(req: LessonRequest) -> str:
    """The activity: add a finished session's entry to its lesson page."""
    key = record(ArtifactStore(), req)
    activity_logger(env_id=req.env_id).info("lesson recorded", key=key, status=req.status)
    return key
