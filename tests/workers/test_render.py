"""What `policyforge run` prints at the end of a session, and the Web UI's details."""

from __future__ import annotations

import re

from rich.console import Console

from tests.builders import run_record
from workers.cli.render import print_status, report
from workflows.contracts.session import IterationRecord, SessionResult, SessionStatus
from workflows.contracts.shown import shown_markdown
from workflows.details import details_markdown


def _record(iteration: int, score: float, **extra) -> IterationRecord:
    return IterationRecord(
        iteration=iteration,
        reward_key=f"sessions/s1/iter_{iteration}/reward_fn.py",
        reward_summary="v_x",
        latex="",
        timesteps=1000,
        score=score,
        passed=False,
        diagnosis=f"scored {score}",
        best_run=run_record("s1", iteration, timesteps_done=1000, score=score),
        **extra,
    )


RECORDS = [
    _record(1, 0.6),
    _record(2, 0.3, changes="halved ctrl", based_on=1),
    _record(
        3, 0.5, changes="more alive bonus", based_on=1, tools_used=["read_reward(iteration=1)"]
    ),
]


def test_the_report_says_how_each_revision_came_about_and_that_the_session_was_aborted():
    result = SessionResult(
        session_id="s1",
        status="aborted",
        passed=False,
        model_label="claude-sonnet-4-6",
        best_iteration=1,
        best_score=0.6,
        best=RECORDS[0],
        iterations=RECORDS,
        note="aborted: enough for today",
    )
    console = Console(record=True, width=200)
    report(result, console, "bucket", "http://localhost:8233")
    text = console.export_text()
    assert "ABORTED  aborted: enough for today" in text
    assert "(changed: halved ctrl)" in text  # revised from the last iteration: nothing to add
    assert "rebased on iteration 1; looked up read_reward(iteration=1))" in text
    assert "best iteration 1, score 0.60" in text


def test_details_show_which_iteration_each_reward_was_revised_from():
    status = SessionStatus(
        session_id="s1",
        prompt="run forward",
        env_id="HalfCheetah-v5",
        model_label="claude-sonnet-4-6",
        stage="revising",
        iteration=4,
        max_iterations=5,
        timesteps_done=0,
        timesteps_target=1000,
        best_score=0.6,
        best_iteration=1,
        iterations=RECORDS,
    )
    rows = [line for line in details_markdown(status).splitlines() if line.startswith("| ")]
    assert rows[0] == "| iter | score | verdict | revised from | diagnosis |"
    assert rows[2:] == [
        "| 1 | 0.60 | not passed | - | scored 0.6 |",
        "| 2 | 0.30 | not passed | 1 | scored 0.3 |",
        "| 3 | 0.50 | not passed | 1 | scored 0.5 |",
    ]


def test_the_report_lists_every_run_of_a_batched_iteration():
    from workflows.contracts.session import RunResult

    runs = [
        RunResult(candidate=k, config="default", seed=0, mean_return=r, score=s, passed=False)
        for k, (r, s) in enumerate([(812.5, 0.4), (1540.0, 0.7), (None, 0.1)])
    ]
    rec = _record(1, 0.7, candidate=1, candidates=3, runs=3, run_results=runs, batched=True)
    result = SessionResult(
        session_id="s1",
        status="not_passed",
        passed=False,
        model_label="offline",
        best_iteration=1,
        best_score=0.7,
        best=rec,
        iterations=[rec],
    )
    console = Console(record=True, width=200)
    report(result, console, "bucket", "http://localhost:8233")
    text = console.export_text()
    assert "3 runs, trained together:" in text
    assert "c1 default seed 0: return 1,540.0, score 0.70  <- won" in text
    assert "c2 default seed 0: return -, score 0.10" in text


def test_generated_text_in_the_web_ui_details_is_text_not_markdown():
    planted = "![x](http://tracker.example/p.png) [ok](http://evil.example) <b>|</b>\x1b[2J\u202e"
    status = SessionStatus(
        session_id="s1",
        prompt="run " + planted,
        env_id="Hopper-v5",
        model_label="claude-sonnet-4-6",
        stage="done",
        iteration=1,
        max_iterations=1,
        timesteps_done=0,
        timesteps_target=1000,
        best_score=0.6,
        best_iteration=1,
        iterations=[_record(1, 0.6).model_copy(update={"diagnosis": planted})],
        signal_errors=[planted],
        note=planted,
    )
    text = details_markdown(status)
    escaped = shown_markdown(planted)
    # Every markup character is escaped (no link, image, tag or cell), escapes made visible.
    assert not re.search(r"(?<!\\)[\[\]<>!|`*_]", escaped.replace("\\\\", ""))
    assert "\x1b" not in escaped and "\u202e" not in escaped
    assert text.count(escaped) >= 3  # the diagnosis, the ignored signal, the note
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert row.count(" | ") == 4  # the diagnosis is one cell


def test_a_pass_that_left_words_unmeasured_says_it_was_partly_expressed():
    result = SessionResult(
        session_id="s1",
        status="passed",
        passed=True,
        model_label="offline (no LLM)",
        best_iteration=1,
        best_score=0.9,
        best=RECORDS[0],
        iterations=RECORDS[:1],
        unmeasured=["gracefully", "with a relaxed stride"],
    )
    console = Console(record=True, width=200)
    report(result, console, "bucket", "http://localhost:8233")
    text = console.export_text()
    assert "PASSED (partly expressed)  best iteration 1" in text
    assert "not measured: gracefully, with a relaxed stride" in text


def test_a_near_miss_reads_not_passed_with_the_number_and_its_target():
    """A high score is progress, not a pass: the report, the status and the Web UI details say
    which criterion fell short, by how much."""
    from workflows.contracts.judging import CriterionScore

    speed = CriterionScore(
        name="forward_speed",
        metric="mean_x_velocity",
        value=1.74,
        target=2.0,
        direction="at_least",
        score=0.87,
        unit="m/s",
        met=False,
        label="mean forward velocity",
    )
    upright = speed.model_copy(
        update={"name": "stays_upright", "value": 0.9, "target": 0.7, "met": True, "score": 1.0}
    )
    near = _record(1, 0.9, criteria=[speed, upright])
    result = SessionResult(
        session_id="s1",
        status="not_passed",
        passed=False,
        model_label="offline (no LLM)",
        best_iteration=1,
        best_score=0.9,
        best=near,
        iterations=[near],
        verdict="not passed: mean forward velocity 1.74 m/s, target at least 2.00 m/s",
    )
    console = Console(record=True, width=200)
    report(result, console, "bucket", "http://localhost:8233")
    text = console.export_text()
    assert (
        "NOT PASSED: mean forward velocity 1.74 m/s, target at least 2.00 m/s  best iteration 1"
        in text
    )
    status = SessionStatus(
        session_id="s1",
        prompt="run forward as fast as possible",
        env_id="HalfCheetah-v5",
        model_label="offline (no LLM)",
        stage="done",
        iteration=1,
        max_iterations=3,
        timesteps_done=0,
        timesteps_target=1000,
        best_score=0.9,
        best_iteration=1,
        iterations=[near],
        verdict=result.verdict,
    )
    details = details_markdown(status)
    verdict = "not passed: mean forward velocity 1.74 m/s, target at least 2.00 m/s"
    assert f"verdict: **{verdict}**" in details.replace("\\", "")
    console = Console(record=True, width=200)
    print_status(console, "s1", None, status, "http://localhost:8233")
    shown_status = console.export_text()
    assert "iter 1: not passed: mean forward velocity 1.74 m/s, target at least 2.00 m/s" in (
        shown_status
    )
    assert "forward_speed: measured 1.74 m/s against at least 2 m/s: not met" in shown_status


def test_an_address_in_generated_text_is_no_link_in_the_web_ui():
    """GFM makes bare addresses links (issue 42): escaped, they read the same and link nowhere."""
    planted = "see http://evil.example, HTTPS://x.example, www.evil.example or me@evil.example"
    shown = shown_markdown(planted)
    assert not re.search(r"(?i)(https?|mailto):(?<!\\:)|(?<!\\)www\.|(?<!\\)@", shown)
    assert shown.replace("\\", "") == planted
