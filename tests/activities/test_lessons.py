"""Lessons across sessions, on the real S3 server: a finished session's entry lands on its page,
a person's notes and edits survive, and the next session's authors read it (the offline author
starts from the passing weights; a language model finds the page in its prompt)."""

from __future__ import annotations

import pytest
from temporalio.testing import ActivityEnvironment

from activities import lessons
from activities.artifacts import ArtifactStore
from activities.llm.activities import author_reward
from activities.llm.offline import OfflineAuthor
from tests.fakes.llm_server import FakeLLMServer, Tools
from workflows.contracts.judging import Criterion, Judgment
from workflows.contracts.keys import lesson_key
from workflows.contracts.lessons import LessonRequest
from workflows.contracts.llm import AuthorRequest
from workflows.contracts.session import IterationEvidence, IterationRecord, RunRecord
from workflows.contracts.training import RewardArtifact, TrainResult

PROMPT, ENV = "hop in place", "Hopper-v5"


def _request(session_id: str, passed: bool, weights: dict[str, float], timesteps: int):
    authored = OfflineAuthor().author(PROMPT, ENV)
    r = authored.reward
    params = {**r.params, **weights}
    run = RunRecord(
        run_name="c0_default_seed_0", seed=0, run_prefix="p/", model_key="m",
        vecnormalize_key="v", video_key=None, trajectory_key="t", timesteps_done=timesteps,
        score=0.9, passed=passed,
    )  # fmt: skip
    records = [
        IterationRecord(
            iteration=1, reward_key="k1", reward_summary="s", latex=r.latex, timesteps=100_000,
            score=0.4, passed=False, diagnosis="fell", failure_tags=["falls_early"], best_run=run,
        ),
        IterationRecord(
            iteration=2, reward_key="k2", reward_summary="s", latex=r.latex, timesteps=timesteps,
            score=0.9 if passed else 0.5, passed=passed, diagnosis="ok", best_run=run,
            changes="raised upright 0.3 -> 0.45",
        ),
    ]  # fmt: skip
    best = IterationEvidence(
        iteration=2,
        reward=RewardArtifact(
            key="k2", latex=r.latex, terms=r.terms, summary=r.summary, template=r.template,
            params=params,
        ),
        judgment=Judgment(score=0.9, passed=passed, diagnosis="ok"),
        train=TrainResult(
            run_prefix="p/", model_key="m", vecnormalize_key="v", timesteps_done=timesteps,
            term_means={"hold": 0.8, "airborne": 0.3},
        ),
    )  # fmt: skip
    return LessonRequest(
        session_id=session_id,
        prompt=PROMPT,
        env_id=ENV,
        llm_model="offline",
        status="passed" if passed else "not_passed",
        iterations=records,
        best=best,
        total_timesteps=100_000,
    )


@pytest.fixture
def store(s3) -> ArtifactStore:
    store = ArtifactStore()
    store.ensure_bucket()
    for key in store.list_keys("lessons/"):
        store.delete(key)
    return store


def test_the_same_intent_finds_the_same_page():
    assert lessons.behaviour_key("Hop in place!") == lessons.behaviour_key("please hop in place")
    assert lessons.behaviour_key("running forwards") == lessons.behaviour_key("run forward")
    assert lessons.behaviour_key("walk forward") != lessons.behaviour_key("walk backward")


def test_a_session_leaves_a_page_and_a_person_can_edit_it(store: ArtifactStore):
    key = lessons.record(store, _request("s-1", False, {}, 100_000))
    assert key == lesson_key(ENV, "hop-place")
    text = store.get_text(key)
    assert "# Lesson: hop-place on Hopper-v5" in text and "1 session(s), 0 passed" in text
    assert "falls_early" in text and "## What worked" not in text

    # A person writes a note; the next session keeps it and adds its entry.
    store.put_text(key, text.replace("(none yet: add yours here)", "Lower the hop target."))
    lessons.record(store, _request("s-2", True, {"upright_weight": 0.45}, 150_000))
    page = store.get_text(key)
    assert "Lower the hop target." in page and "2 session(s), 1 passed" in page
    assert "Session `s-2` (offline) passed at iteration 2 with score 0.90, 150,000 steps" in page
    assert "upright_weight 0.45" in page
    # A retried record replaces its own entry instead of adding a second.
    lessons.record(store, _request("s-2", True, {"upright_weight": 0.45}, 150_000))
    lesson = lessons.load(store, ENV, PROMPT)
    assert lesson is not None and [e.session_id for e in lesson.entries] == ["s-1", "s-2"]
    assert "```policyforge-lesson" not in lessons.text_for_authors(lesson)


def test_a_broken_block_is_refused_and_never_stops_a_session(store: ArtifactStore):
    key = lessons.record(store, _request("s-1", True, {}, 100_000))
    broken = store.get_text(key).replace('"session_id"', '"session_id', 1)
    with pytest.raises(lessons.LessonFormatError, match="does not read"):
        lessons.parse(ENV, "hop-place", broken)
    store.put_text(key, broken)
    assert lessons.load(store, ENV, PROMPT) is None  # authors go on without it
    lessons.record(store, _request("s-2", True, {}, 100_000))
    assert store.exists(key + ".unreadable")  # the person's page is kept aside
    assert lessons.load(store, ENV, PROMPT) is not None


def test_the_offline_author_starts_from_the_passing_weights(store: ArtifactStore):
    lessons.record(store, _request("s-1", True, {"upright_weight": 0.45}, 150_000))
    res = ActivityEnvironment().run(
        author_reward,
        AuthorRequest(
            session_id="s-3", iteration=1, prompt=PROMPT, env_id=ENV, llm_model="offline"
        ),
    )
    assert res.reward.params["upright_weight"] == 0.45
    assert res.timesteps == 150_000
    code = store.get_text(res.reward.key)
    assert "Started from the lesson of session s-1" in code and '"upright": 0.45' in code


def test_without_a_passing_entry_the_defaults_stay(store: ArtifactStore):
    lessons.record(store, _request("s-1", False, {"upright_weight": 0.9}, 150_000))
    res = ActivityEnvironment().run(
        author_reward,
        AuthorRequest(
            session_id="s-3", iteration=1, prompt=PROMPT, env_id=ENV, llm_model="offline"
        ),
    )
    assert res.reward.params["upright_weight"] == 0.3 and res.timesteps is None


def test_a_language_model_author_reads_the_lesson(store, monkeypatch):
    lessons.record(store, _request("s-1", True, {"upright_weight": 0.45}, 150_000))
    code = (
        "class R(RewardFunction):\n    def compute(self, obs, action, next_obs, info):\n"
        "        return 1.0, {'alive': 1.0}\n"
    )
    with FakeLLMServer() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url("anthropic"))
        fake.push(
            "anthropic", Tools([("submit_reward", {"code": code, "latex": "r", "summary": "s"})])
        )
        criteria = [Criterion(name="c", description="d", measure="m", target=1.0)]
        ActivityEnvironment().run(
            author_reward,
            AuthorRequest(
                session_id="s-4", iteration=1, prompt="Hop in place", env_id=ENV,
                llm_model="claude-sonnet-4-6", criteria=criteria,
            ),
        )  # fmt: skip
        sent = fake.requests_for("anthropic")[0].prompt().user
    assert "# Lessons from earlier sessions on this intent" in sent
    assert "Session `s-1` (offline) passed at iteration 2" in sent
    assert "upright_weight 0.45" in sent and "falls_early" in sent


def test_a_lesson_says_why_an_iteration_did_not_pass_by_the_numbers():
    from workflows.contracts.judging import CriterionScore

    req = _request("s-9", False, {}, 50_000)
    short = CriterionScore(
        name="hold", metric="late_mean_height", value=1.02, target=1.15, direction="at_least",
        score=0.88, unit="m", met=False, label="late mean torso height",
    )  # fmt: skip
    first = req.iterations[0].model_copy(update={"criteria": [short]})
    entry = lessons.entry_of(req.model_copy(update={"iterations": [first]}))
    assert entry.history[0].startswith(
        "iteration 1: not passed: late mean torso height 1.02 m, target at least 1.15 m "
        "(score 0.40)"
    )
    page = lessons.render(lessons.Lesson(ENV, "hop-place", entries=[entry]))
    assert "## What failed" in page and "target at least 1.15 m" in page


def test_every_agent_that_writes_criteria_or_code_reads_the_passing_reward(store, monkeypatch):
    """The elicitor, the reward author and the judge author read the lesson, with the passing
    reward's module (its code and SHAPING) from S3."""
    from activities.llm.activities import author_judge, elicit_criteria
    from workflows.contracts.llm import ElicitRequest, JudgeAuthorRequest

    passing = (
        "class Hop(RewardFunction):\n    def compute(self, obs, action, next_obs, info):\n"
        "        return 1.0, {'hold': 1.0}\n\nSHAPING = {'max_episode_steps': 300}\n"
    )
    store.put_text("k2", passing)  # the best iteration's reward module, where the entry says
    lessons.record(store, _request("s-1", True, {"upright_weight": 0.45}, 150_000))
    items = [
        {"name": n, "description": n, "measure": "m", "target": 1, "direction": "at_least"}
        for n in ("hops", "upright", "calm")
    ]
    judge = "def judge_fn(t):\n    return {'criteria': {}, 'measured': {}, 'diagnosis': ''}\n"
    criteria = [Criterion(name="c", description="d", measure="m", target=1.0)]
    with FakeLLMServer() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url("anthropic"))
        fake.push(
            "anthropic",
            Tools([("submit_criteria", {"criteria": items})]),
            Tools([("submit_judge", {"code": judge})]),
        )
        ActivityEnvironment().run(
            elicit_criteria,
            ElicitRequest(session_id="s-5", prompt=PROMPT, env_id=ENV,
                          llm_model="claude-sonnet-4-6"),
        )  # fmt: skip
        ActivityEnvironment().run(
            author_judge,
            JudgeAuthorRequest(session_id="s-5", prompt=PROMPT, env_id=ENV,
                               llm_model="claude-sonnet-4-6", criteria=criteria),
        )  # fmt: skip
        sent = [r.prompt().user for r in fake.requests_for("anthropic")]
    for user in sent:
        assert "# Lessons from earlier sessions on this intent" in user
        assert (
            "class Hop(RewardFunction)" in user and "SHAPING = {'max_episode_steps': 300}" in user
        )
