"""The reviser's tools read what the session wrote to S3 (real SeaweedFS), as a model reads it.

A two-iteration history points at run folders filled the way training, evaluation and judging
fill them: reward module, judgment.json, summary.json, metrics/scalars.jsonl and an evaluation
trajectory npz. Each test runs the `session_tool` activity and reads back the text it put at
`result_key`, which is what the model is shown next.
"""

from __future__ import annotations

import io
import json
import uuid

import numpy as np
import pytest
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.judging.session_tools import session_tool
from tests.builders import FORWARD_REWARD, run_record
from workflows.contracts.judging import CriterionScore, Judgment
from workflows.contracts.keys import iteration_prefix
from workflows.contracts.session import IterationRecord
from workflows.contracts.tools import ToolCallRef, ToolOutcome, ToolRequest

ENV_ID = "HalfCheetah-v5"
DT = 0.05
STEPS = 100  # 5 s

REWARD_1 = FORWARD_REWARD
REWARD_2 = REWARD_1.replace("RunForward", "RunForwardUpright").replace("-0.1 *", "-0.3 *")

CHECKPOINTS = {"25": 0.12, "50": 0.21, "100": 0.35}


def _trajectory(speed: float) -> tuple[bytes, dict[str, np.ndarray]]:
    """An evaluation episode laid out as rollout.collect writes it."""
    t = np.arange(STEPS, dtype=np.float64)
    qpos = np.zeros((STEPS, 9))
    qpos[:, 0] = np.cumsum(np.full(STEPS, speed * DT))  # x
    qpos[:, 1] = 0.5 + 0.01 * t  # z: the torso rises 1 cm per step
    arrays: dict[str, np.ndarray] = {
        "obs": np.zeros((STEPS, 17)),
        "next_obs": np.zeros((STEPS, 17)),
        "action": np.tile(np.linspace(-0.5, 0.5, 6), (STEPS, 1)),
        "reward": speed + 0.02 * t,
        "env_reward": speed + 0.01 * t,
        "qpos": qpos,
        "qvel": np.zeros((STEPS, 9)),
        "terminated": np.zeros(STEPS, dtype=bool),
        "truncated": np.r_[np.zeros(STEPS - 1, dtype=bool), True],
        "term_forward": speed + 0.03 * t,
        "term_ctrl": np.full(STEPS, -0.035),
        "info_x_velocity": speed * (1.0 + np.sin(t / 7.0)),
        "info_reward_ctrl": np.full(STEPS, -0.0175),
        "meta_env_id": np.array(ENV_ID),
        "meta_dt": np.array(DT),
    }
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue(), arrays


def _scalars(rows: int, scale: float) -> str:
    lines = []
    for i in range(rows):
        lines.append(
            json.dumps(
                {
                    "timesteps": 1000 * (i + 1),
                    "ep_return_mean": None if i == 0 else scale * i,
                    "ep_len_mean": 1000.0,
                    "env_return_mean": scale * i / 2,
                    "episodes": i,  # bookkeeping: not shown
                    "approx_kl": 0.01,
                    "term_forward": 0.05 * i,
                    "term_ctrl": -0.04,
                }
            )
        )
    return "\n".join(lines) + "\n"


VISUAL = CriterionScore(
    name="visual:upright",
    metric="vlm",
    value=1.0,
    target=1.0,
    direction="at_least",
    score=1.0,
    measured=False,
    met=True,
    verdict="met",
    reason="the back stays on top",
)


class Session:
    """A session with two judged iterations in S3; iteration 2's judge never wrote its file."""

    def __init__(self, store: ArtifactStore) -> None:
        self.sid = f"tools-{uuid.uuid4().hex[:8]}"
        self.store = store
        self.arrays: dict[int, dict[str, np.ndarray]] = {}
        records = [self._iteration(1, REWARD_1, 1.2, 0.35), self._iteration(2, REWARD_2, 0.8, 0.2)]
        self.history_key = iteration_prefix(self.sid, 3) + "revision_c0/history.json"
        body = json.dumps([r.model_dump(mode="json") for r in records], indent=1)
        store.put_text(self.history_key, body)

    def _iteration(self, n: int, code: str, speed: float, score: float) -> IterationRecord:
        run = run_record(self.sid, n, timesteps_done=20_480, score=score)
        prefix = run.run_prefix
        reward_key = self.store.put_text(iteration_prefix(self.sid, n) + "reward_fn.py", code)
        npz, self.arrays[n] = _trajectory(speed)
        self.store.put_bytes(run.trajectory_key, npz)
        if n == 1:
            judgment = Judgment(
                score=score,
                passed=False,
                diagnosis="mean forward velocity 1.20 m/s against a target of 3.00",
                criteria=[
                    CriterionScore(
                        name="forward_speed",
                        metric="mean_x_velocity",
                        value=1.2,
                        target=3.0,
                        direction="at_least",
                        score=0.4,
                    ),
                    CriterionScore(
                        name="calm_actions",
                        metric="mean_abs_action",
                        value=0.3,
                        target=0.5,
                        direction="at_most",
                        score=1.0,
                    ),
                ],
                failure_tags=["too_slow"],
                checkpoints=CHECKPOINTS,
            )
            self.store.put_text(prefix + "judgment.json", judgment.model_dump_json(indent=2))
        summary = {
            "env_id": ENV_ID,
            "timesteps": 20_000,
            "timesteps_done": 20_480,
            "mean_episode_return": 812.5,
            "mean_env_return": 640.25,
            "term_means": {"forward": 0.95, "ctrl": -0.04},
            "still_improving": True,
            "hyperparameters": {"algo": "ppo", "learning_rate": 0.0003, "n_steps": 512},
        }
        self.store.put_text(prefix + "summary.json", json.dumps(summary, indent=2))
        self.store.put_text(prefix + "metrics/scalars.jsonl", _scalars(20, 10.0 * n))
        return IterationRecord(
            iteration=n,
            reward_key=reward_key,
            reward_summary="forward speed minus control cost",
            latex=r"r = v_x - c\|a\|^2",
            timesteps=20_000,
            score=score,
            passed=False,
            diagnosis="too slow",
            failure_tags=["too_slow"],
            best_run=run,
            # The video judge's verdict joins the record's criteria (workflows/synthesis.py).
            criteria=[VISUAL] if n == 1 else [],
        )

    def run(self, name: str, **arguments: object) -> tuple[ToolOutcome, str]:
        """Run the tool as the workflow does; the outcome and the text the model will read."""
        key = iteration_prefix(self.sid, 3) + f"revision_c0/tool_0_{uuid.uuid4().hex[:6]}.txt"
        req = ToolRequest(
            session_id=self.sid,
            env_id=ENV_ID,
            call=ToolCallRef(id="toolu_01", name=name, arguments=arguments),
            result_key=key,
            history_key=self.history_key,
        )
        outcome = ActivityEnvironment().run(session_tool, req)
        assert outcome.call_id == "toolu_01" and outcome.name == name
        assert outcome.key == key
        return outcome, self.store.get_text(key)


@pytest.fixture(scope="module")
def session(s3: str) -> Session:
    return Session(ArtifactStore())


def _table(text: str) -> list[dict[str, str]]:
    """The rows of the first markdown table in `text`, as {column: cell}."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert set(lines[1].replace("|", "").split()) == {"---"}
    return [
        dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        for line in lines[2:]
    ]


def _error(outcome: ToolOutcome, text: str) -> str:
    assert outcome.is_error
    assert text.startswith("error: ") and "\n" not in text
    assert outcome.summary == text[:200]  # what the workflow logs
    return text


# --- what a model reads ------------------------------------------------------------------------


def test_read_reward_returns_that_iterations_code(session: Session):
    outcome, text = session.run("read_reward", iteration=1)
    assert not outcome.is_error
    assert REWARD_1 in text and "RunForwardUpright" not in text
    assert text.splitlines()[0].startswith("# Iteration 1's reward")
    _, second = session.run("read_reward", iteration=2)
    assert REWARD_2 in second


def test_read_judgment_lists_criteria_and_checkpoint_scores(session: Session):
    outcome, text = session.run("read_judgment", iteration=1)
    assert not outcome.is_error
    lines = text.splitlines()
    assert lines[0] == (
        "# Iteration 1: not passed: forward speed 1.20, target at least 3.00 (score 0.35)"
    )
    assert lines[1] == "too slow"  # the record's diagnosis (both judges'), as the opening has it
    assert "- forward_speed: measured 1.2 against at least 3: not met (score 0.40)" in lines
    assert "- calm_actions: measured 0.3 against at most 0.5: met" in lines
    # The video judge's verdict, from the record: a verdict, never a measurement.
    assert "- visual:upright: the video judge says met: the back stays on top" in lines
    assert "Failure tags: too_slow" in lines
    # The checkpoint table the reviser's opening shows for the last iteration, from one source.
    rows = _table(text)
    assert [(r["% of budget"], r["judge score"]) for r in rows] == [
        ("25%", "0.12"), ("50%", "0.21"), ("100%", "0.35")
    ]  # fmt: skip
    assert "forward_speed measured (target at least 3)" in rows[0]


def test_read_training_shows_the_curve_as_a_table(session: Session):
    outcome, text = session.run("read_training", iteration=2)
    assert not outcome.is_error
    assert "20,480 steps; mean episode return 812.5 (env's own reward 640.25)" in text
    assert "still improving at the end: True" in text
    assert "Per-step term means: forward +0.95, ctrl -0.04" in text
    assert '"learning_rate": 0.0003' in text
    rows = _table(text)
    assert list(rows[0]) == [
        "timesteps",
        "ep_return_mean",
        "env_return_mean",
        "ep_len_mean",
        "approx_kl",
        "term_ctrl",
        "term_forward",
    ]
    # About ten points from the first update to the last, in order.
    assert len(rows) == 10
    steps = [r["timesteps"] for r in rows]  # step counts exactly, not 2e+04
    assert steps[0] == "1000" and steps[-1] == "20000"
    assert [int(s) for s in steps] == sorted(int(s) for s in steps)
    assert rows[0]["ep_return_mean"] == "None"  # no episode had finished yet
    returns = [float(r["ep_return_mean"]) for r in rows[1:]]
    assert returns == sorted(returns) and returns[-1] == pytest.approx(20.0 * 19)
    assert float(rows[-1]["term_forward"]) == pytest.approx(0.05 * 19)


def test_trajectory_stats_over_a_window(session: Session):
    arrays = session.arrays[1]
    outcome, text = session.run(
        "trajectory_stats",
        iteration=1,
        fields=["info_x_velocity", "qpos[1]", "action[5]"],
        start_s=1.0,
        end_s=2.0,
    )
    assert not outcome.is_error
    assert text.splitlines()[0] == (
        "Episode of 100 steps (5.00 s, dt 0.05 s); window 1.00-2.00 s (steps 20-39)."
    )
    rows = {r["field"]: r for r in _table(text)}
    assert list(rows) == ["info_x_velocity", "qpos[1]", "action[5]"]
    vx = arrays["info_x_velocity"][20:40]
    assert float(rows["info_x_velocity"]["mean"]) == pytest.approx(vx.mean(), rel=1e-3)
    assert float(rows["info_x_velocity"]["min"]) == pytest.approx(vx.min(), rel=1e-3)
    assert float(rows["info_x_velocity"]["max"]) == pytest.approx(vx.max(), rel=1e-3)
    z = rows["qpos[1]"]
    assert float(z["mean"]) == pytest.approx(0.5 + 0.01 * 29.5)
    assert (float(z["first"]), float(z["last"])) == pytest.approx((0.7, 0.89))
    assert float(rows["action[5]"]["mean"]) == pytest.approx(0.5)


def test_trajectory_window_edges_follow_the_seconds_asked(session: Session):
    # 0.3 / 0.05 is 5.999... in floating point: the window must still start at step 6.
    _, text = session.run(
        "trajectory_stats", iteration=1, fields=["qpos[1]"], start_s=0.3, end_s=0.7
    )
    assert "window 0.30-0.70 s (steps 6-13)" in text
    assert float(_table(text)[0]["first"]) == pytest.approx(0.56)


def test_trajectory_stats_without_fields_shows_info_and_term_fields(session: Session):
    outcome, text = session.run("trajectory_stats", iteration=2)
    assert not outcome.is_error
    assert "window 0.00-5.00 s (steps 0-99)" in text
    rows = {r["field"]: r for r in _table(text)}
    assert list(rows) == ["info_reward_ctrl", "info_x_velocity", "term_ctrl", "term_forward"]
    assert float(rows["term_forward"]["mean"]) == pytest.approx(0.8 + 0.03 * 49.5)


# --- mistakes come back as answers the model can act on --------------------------------------


def test_unknown_iteration_names_the_ones_there_are(session: Session):
    text = _error(*session.run("read_reward", iteration=7))
    assert "iteration must be one of [1, 2]" in text and "7" in text
    text = _error(*session.run("read_training"))
    assert "iteration must be one of [1, 2]" in text


def test_unknown_field_lists_the_fields(session: Session):
    text = _error(*session.run("trajectory_stats", iteration=1, fields=["info_y_velocity"]))
    assert "'info_y_velocity'" in text
    assert "info_x_velocity" in text and "term_forward" in text and "qpos[i]" in text
    text = _error(*session.run("trajectory_stats", iteration=1, fields=["qpos[9]"]))
    assert text == "error: qpos[9]: qpos has 9 columns"


def test_empty_window_says_how_long_the_episode_is(session: Session):
    text = _error(*session.run("trajectory_stats", iteration=1, start_s=6.0))
    assert "is empty" in text and "the episode lasts 5.00 s" in text
    text = _error(*session.run("trajectory_stats", iteration=1, start_s=2.0, end_s=1.0))
    assert "the window 2-1 s is empty" in text
    text = _error(*session.run("trajectory_stats", iteration=1, start_s=-1))
    assert "start_s must be a number of seconds >= 0" in text


def test_unknown_tool_names_the_tools(session: Session):
    text = _error(*session.run("read_minds", iteration=1))
    assert "no tool named 'read_minds'" in text
    for name in ("read_reward", "read_judgment", "read_training", "trajectory_stats"):
        assert name in text


def test_missing_judgment_is_an_answer_not_a_failure(session: Session):
    text = _error(*session.run("read_judgment", iteration=2))
    assert text == "error: iteration 2 has no judgment.json"


def test_missing_reward_file_is_an_answer_not_a_failure(session: Session):
    # A history whose iteration 1 names a reward module that is not in S3.
    first = json.loads(session.store.get_text(session.history_key))[0]
    first["reward_key"] = iteration_prefix(session.sid, 9) + "gone.py"
    key = session.store.put_text(
        iteration_prefix(session.sid, 9) + "history.json", json.dumps([first])
    )
    req = ToolRequest(
        session_id=session.sid,
        env_id=ENV_ID,
        call=ToolCallRef(id="c1", name="read_reward", arguments={"iteration": 1}),
        result_key=iteration_prefix(session.sid, 9) + "tool.txt",
        history_key=key,
    )
    outcome = ActivityEnvironment().run(session_tool, req)
    text = _error(outcome, session.store.get_text(req.result_key))
    assert text == f"error: iteration 1's reward is not in storage ({first['reward_key']})"
