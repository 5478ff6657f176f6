"""Generated text is data (issue #30 point 6): term and criteria names, diagnoses, formulas,
revision notes and errors quoting generated code reach the terminal with their control and
invisible characters as visible escapes, never as rich markup, emoji codes or forged lines."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from rich.console import Console

from tests.builders import run_record
from tests.workers.test_cli import one_line_error, run_cli
from tests.workers.test_logs import log_stream  # noqa: F401 - the fixture
from workers.cli.render import print_status, report
from workflows.contracts.judging import CriterionScore
from workflows.contracts.session import IterationRecord, RunResult, SessionResult, SessionStatus
from workflows.contracts.training import RewardArtifact

# Each would do something if shown raw: a rich closing tag with nothing to close (MarkupError),
# markup and an emoji code, a clear-screen escape, a right-to-left override, a forged line.
PLANTED = {
    "close": "[/]",
    "markup": "[bold red]loud[/bold red] :warning:",
    "clear": "wipe\x1b[2J",
    "rtl": "rtl\u202eDEVORPPA",
    "line": "x\nsandbox layers: none",
    "cr": "y\rPASSED",
    "title": "t\x1b]0;title\x07",
}


def _raw_free(text: str) -> None:
    """No character in `text` a terminal would act on or hide (the escapes are visible)."""
    for ch in ("\x1b", "\x07", "\r", "\u202e"):
        assert ch not in text, (ch, text)


def test_check_reward_prints_planted_term_names_literally(tmp_path: Path):
    reward = tmp_path / "reward_fn.py"
    reward.write_text(
        "def reward_fn(obs, action, next_obs, info):\n"
        "    v = float(info['x_velocity'])\n"
        "    terms = {'[/]': v, ':warning: [bold]b[/bold]': 0.25}\n"
        "    return sum(terms.values()), terms\n"
    )
    proc = run_cli("check-reward", str(reward), "--env", "HalfCheetah-v5", "--steps", "20")
    assert proc.returncode == 0, proc.stderr
    assert "MarkupError" not in proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()[3:]]
    assert names == ["[/]", ":warning:"], proc.stdout
    assert "  :warning: [bold]b[/bold] " in proc.stdout


def test_check_reward_refuses_a_term_name_that_prints_as_something_else(tmp_path: Path):
    """A name with a terminal escape or a direction override is the reward's error where it
    crosses from the sandbox (issue 42); the refusal shows it escaped, in one line."""
    reward = tmp_path / "reward_fn.py"
    reward.write_text(
        "def reward_fn(obs, action, next_obs, info):\n"
        "    return 1.0, {'ok': 1.0, 'wipe\\x1b[2J': 1.0, 'rtl\\u202eDEVORPPA': 0.5}\n"
    )
    proc = run_cli("check-reward", str(reward), "--env", "HalfCheetah-v5", "--steps", "5")
    line = one_line_error(proc)
    _raw_free(proc.stdout + proc.stderr)
    assert "print as something else" in line and "\\x1b[2J" in line, line


def test_check_reward_error_quoting_generated_code_is_one_escaped_line(tmp_path: Path):
    reward = tmp_path / "reward_fn.py"
    reward.write_text(
        "def reward_fn(obs, action, next_obs, info):\n"
        "    raise ValueError('boom\\x1b[2J\\rPASSED\\u202e [/]')\n"
    )
    proc = run_cli("check-reward", str(reward), "--env", "HalfCheetah-v5", "--steps", "5")
    line = one_line_error(proc)
    _raw_free(proc.stderr)
    assert "boom\\x1b[2J" in line and "\\u202e [/]" in line


def test_check_judge_prints_no_forged_line(tmp_path: Path):
    judge = tmp_path / "judge_fn.py"
    judge.write_text(
        "def judge_fn(t):\n"
        "    raise ValueError('low\\nsandbox layers: none\\rPASSED\\x1b]0;title\\x07 [/]')\n"
    )
    criteria = tmp_path / "criteria.json"
    criteria.write_text(json.dumps([{"name": "tall", "description": "d", "target": 1.0}]))
    args = ("--env", "Hopper-v5", "--criteria", str(criteria), "--steps", "20")
    proc = run_cli("check-judge", str(judge), *args)
    assert proc.returncode == 1, proc.stderr
    _raw_free(proc.stdout)
    lines = [line.strip() for line in proc.stdout.splitlines()]
    # Sent back in one line: the error's line breaks made spaces, its escapes visible.
    assert len(lines) == 1 and lines[0].startswith("sent back: judge_fn.py line 2: ValueError")
    assert not [line for line in lines if line.startswith(("PASSED", "sandbox layers"))]
    assert "PASSED\\x1b]0;title\\x07 [/]" in lines[0], lines


def _record(iteration: int, **extra) -> IterationRecord:
    return IterationRecord(
        iteration=iteration,
        reward_key=f"sessions/s1/iter_{iteration}/reward_fn.py",
        reward_summary="v_x",
        latex=PLANTED["markup"],
        timesteps=1000,
        score=0.4,
        passed=False,
        diagnosis=" ".join(PLANTED.values()),
        best_run=run_record("s1", iteration, timesteps_done=1000, score=0.4),
        **extra,
    )


def _criterion(name: str) -> CriterionScore:
    return CriterionScore(
        name=name, metric="m", value=0.5, target=1.0, direction="at_least", score=0.5
    )


RECORD = _record(
    2,
    based_on=1,
    changes=PLANTED["line"] + PLANTED["close"] + PLANTED["title"],
    tools_used=[PLANTED["cr"]],
    criteria=[_criterion(text) for text in PLANTED.values()],
    config=PLANTED["close"],
    run_results=[
        RunResult(candidate=0, config=PLANTED["close"], seed=s, score=0.4, passed=False)
        for s in (0, 1)
    ],
)


def _printed(draw) -> str:
    """What a non-terminal console (a pipe, a log file) receives: every byte as written."""
    out = io.StringIO()
    draw(Console(file=out, width=400, soft_wrap=True))
    return out.getvalue()


def _literal(text: str) -> None:
    """Each planted text shows as its escapes and literal brackets; nothing forged a line."""
    _raw_free(text)
    for expected in (
        "[/]",
        "[bold red]loud[/bold red] :warning:",
        "wipe\\x1b[2J",
        "rtl\\u202eDEVORPPA",
        "x\\x0asandbox layers: none",
        "y\\x0dPASSED",
        "t\\x1b]0;title\\x07",
    ):
        assert expected in text, (expected, text)
    lines = [line.strip(" │|") for line in text.splitlines()]
    assert not [line for line in lines if line.startswith(("sandbox layers", "PASSED"))], text


def test_status_shows_diagnosis_criteria_formula_and_errors_literally():
    status = SessionStatus(
        session_id="s1",
        prompt="run forward",
        env_id="HalfCheetah-v5",
        model_label="claude-sonnet-4-6",
        stage="revising",
        iteration=3,
        max_iterations=5,
        timesteps_done=0,
        timesteps_target=1000,
        best_score=0.4,
        best_iteration=2,
        iterations=[RECORD],
        awaiting_approval=3,
        pending_rewards=[
            RewardArtifact(key="k", latex=" ".join(PLANTED.values()), terms=[], summary="s")
        ],
        signal_errors=[PLANTED["cr"] + PLANTED["close"]],
    )
    text = _printed(lambda c: print_status(c, "s1", None, status, "http://ui", PLANTED["clear"]))
    _literal(text)
    assert "failed: wipe\\x1b[2J" in text
    assert "    [/]: measured 0.5 against at least 1: not met (score 0.50)" in text
    assert "c0 [/] seed 1: return -, score 0.40  <- won" in text


def test_report_shows_diagnosis_revision_notes_and_note_literally():
    result = SessionResult(
        session_id="s1",
        status="not_passed",
        passed=False,
        model_label="claude-sonnet-4-6",
        best_iteration=2,
        best_score=0.4,
        best=RECORD,
        iterations=[RECORD],
        note=PLANTED["markup"] + PLANTED["close"],
    )
    text = _printed(lambda c: report(result, c, "bucket", "http://ui"))
    _literal(text)
    assert "(changed: x\\x0asandbox layers: none[/]t\\x1b]0;title\\x07" in text
    assert "looked up y\\x0dPASSED)" in text
    assert "NOT PASSED  [bold red]loud[/bold red] :warning:[/]" in text


def test_a_log_line_of_generated_text_stays_one_escaped_line(log_stream):  # noqa: F811
    logging.getLogger("pf.test").warning("term %s", PLANTED["line"] + PLANTED["rtl"])
    lines = log_stream.getvalue().splitlines()
    assert len(lines) == 1
    _raw_free(lines[0])
    assert "\u2028" not in lines[0] and "\n" not in lines[0]
    assert json.loads(lines[0])["event"] == "term " + PLANTED["line"] + PLANTED["rtl"]
