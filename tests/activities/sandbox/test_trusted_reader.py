"""The trusted side reads every sandbox reply strictly: forged frames, malformed answers and
run-long growth are the generated code's fault (one line, for the fixer), never a crash of the
runner, and nothing a reply holds can grow what goes into Temporal or a prompt past a bound."""

from __future__ import annotations

import contextlib
import json
import os
import re
import struct
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.sandbox import wire
from activities.sandbox.client import SandboxClient
from activities.sandbox.judge_client import judge_all
from activities.sandbox.judge_code import JudgeLoadError
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import MAX_TERM_NAME, MAX_TERMS, RewardLoadError
from activities.training import job
from activities.training.train_activity import train_result
from workflows.contracts.judging import CriterionScore, Judgment

TEMPORAL_RESULT_BOUND = 256 * 1024
LAYERS = pytest.mark.parametrize("python_layers", [True, False], ids=["python-layers", "os-only"])


def _frame(header: bytes, payload: bytes = b"") -> bytes:
    return struct.pack("<II", len(header), len(payload)) + header + payload


def _read(data: bytes) -> tuple[dict, bytes]:
    """One frame read as the client reads the sandbox's stdout (a file: no pipe to fill)."""
    fd = os.memfd_create("frames")
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        return wire.FrameReader(fd).read(5.0)
    finally:
        os.close(fd)


DEEP = b'{"id": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


@pytest.mark.parametrize(
    "header",
    [
        DEEP,  # the parser's recursion, exhausted
        b'{"id": Infinity}',
        b'{"id": -Infinity}',
        b'{"calls": NaN}',
        b'{"id": 1e400}',  # overflows a float
        b'{"id": ' + b"9" * 5000 + b"}",  # more digits than Python converts
        b'{"a": [[[[[[[1]]]]]]]}',  # deeper than any answer is
        b'["not", "an", "object"]',
        b"\xff\xfe",
    ],
    ids=["deep", "inf", "-inf", "nan", "overflow", "digits", "nested", "list", "bytes"],
)
def test_a_forged_header_is_a_wire_error_not_a_crash(header: bytes):
    with pytest.raises(wire.WireError):
        _read(_frame(header))


def test_answers_as_the_host_writes_them_still_read():
    header = {"names": ["a", "b"], "rows": [["a"], ["b"]], "judgment": {"criteria": {"x": 1.0}}}
    assert _read(wire.encode(header, b"12345678")) == (header, b"12345678")


def test_reading_the_worst_headers_allocates_a_bounded_amount():
    """A reply is at most MAX_HEADER + MAX_PAYLOAD bytes on the wire; parsed, the worst shapes
    of a 1 MB header (many tiny containers) stay under 64 MB and a full payload under 80 MB,
    freed with the reply."""
    n = wire.MAX_HEADER // 3 - 8
    worst = [b'{"a": [' + b",".join([b"[]"] * n) + b"]}", b'{"a": "' + b"x" * (n * 3) + b'"}']
    for header in worst:
        header = header[: wire.MAX_HEADER]
        tracemalloc.start()
        with contextlib.suppress(wire.WireError):
            _read(_frame(header))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 64 << 20, peak
    # A full payload is read into one buffer and handed over once.
    tracemalloc.start()
    _read(_frame(b'{"a": 1}', bytes(wire.MAX_PAYLOAD)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 80 << 20, peak


@pytest.fixture
def box() -> Iterator[SandboxClient]:
    with SandboxClient() as b:
        yield b


def _columns(n: int) -> tuple[np.ndarray, ...]:
    return np.zeros((n, 3)), np.zeros((n, 1)), np.zeros((n, 3))


NESTED_TERMS = """
class Deep(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        return 0.0, {"x": 0.0}

    @property
    def terms(self):
        out = []
        for _ in range(100000):
            out = [out]
        return out
"""


@LAYERS
def test_terms_that_are_not_a_list_of_names_are_the_rewards_error(box, python_layers: bool):
    with pytest.raises(RewardLoadError, match="`terms` must be a list of term names"):
        SandboxRewards(box, NESTED_TERMS, "reward_fn.py", python_layers=python_layers)


NEW_NAME_EVERY_CALL = """
class Growing(RewardFunction):
    def __init__(self):
        self.n = 0

    def compute(self, obs, action, next_obs, info):
        self.n += 1
        return 0.0, {"t" + str(self.n): 0.0}
"""


@LAYERS
def test_a_reward_naming_new_terms_on_every_call_is_stopped_at_the_run_budget(
    box, python_layers: bool
):
    rewards = SandboxRewards(box, NEW_NAME_EVERY_CALL, "reward_fn.py", python_layers=python_layers)
    rid = rewards.new_instance()
    obs, act, nxt = _columns(1)
    for _ in range(MAX_TERMS):
        rewards.score_columns([rid], np.zeros(1, bool), obs, act, nxt, {})
    with pytest.raises(RewardLoadError, match=f"more than {MAX_TERMS} distinct term names"):
        rewards.score_columns([rid], np.zeros(1, bool), obs, act, nxt, {})


def test_the_largest_train_result_a_reward_can_make_fits_well_under_temporals_limit():
    """Every field a reward's replies reach, at its bound: MAX_TERMS names of the longest."""
    names = [f"{i:02d}" + "x" * (MAX_TERM_NAME - 2) for i in range(MAX_TERMS)]
    summary = {
        "timesteps_done": 1,
        "mean_episode_return": 1.0,
        "mean_env_return": 1.0,
        "term_means": dict.fromkeys(names, -1.2345678901234567e-300),
        "wall_seconds": 1.0,
        "steps_per_second": 1.0,
        "still_improving": False,
        "fault": "f" * 500,
    }
    size = len(train_result("sessions/s/iter_1/r/", summary).model_dump_json())
    assert size < 8 * 1024 < TEMPORAL_RESULT_BOUND


MANY_CRITERIA = """
def judge_fn(trajectory):
    crit = {"c" + str(i): 0.5 for i in range(30000)}
    crit["x" * 300000] = 0.5
    crit["speed"] = 0.5
    return {"score": 0.5, "criteria": crit, "diagnosis": "d" * 100000,
            "measured": {k: 1.0 for k in crit}, "failure_tags": ["t" * 1000] * 1000}
"""


@LAYERS
def test_a_judge_answering_thousands_of_criteria_is_cut_to_the_ones_asked_or_refused(
    box, python_layers: bool
):
    trajectory = {"qpos": np.zeros((5, 3))}
    (judged,) = judge_all(
        box, MANY_CRITERIA, "judge_fn.py", [trajectory], ["speed"], python_layers=python_layers
    )
    assert list(judged["criteria"]) == ["speed"] and list(judged["measured"]) == ["speed"]
    judgment = Judgment(
        score=judged["score"],
        passed=False,
        diagnosis=judged["diagnosis"],
        criteria=[
            CriterionScore(
                name="speed",
                metric="speed",
                value=0.5,
                target=1.0,
                direction="at_least",
                score=0.5,
                measured=1.0,
            )
        ],
        failure_tags=judged["failure_tags"],
    )
    assert len(judgment.model_dump_json()) < 4 * 1024 < TEMPORAL_RESULT_BOUND
    # With no criteria asked for (check-judge on a bare file), the judge's own are bounded.
    with pytest.raises(JudgeLoadError, match="at most 16"):
        judge_all(box, MANY_CRITERIA, "judge_fn.py", [trajectory], [], python_layers=python_layers)


# With the Python layers off (standing in for a bug in them), the code reaches the host's
# module and makes its end-of-training counts NaN.
FORGED_COUNTS = """
import sys

host = sys.modules["__main__"]  # the host runs as python -m activities.sandbox.host
host.counts_of = lambda rewards: {"calls": float("nan"), "nonfinite": 0, "clipped": 0}


def reward_fn(obs, action, next_obs, info):
    return 1.0, {"alive": 1.0}
"""


async def test_forged_counts_after_training_keep_the_model_and_blame_the_code(tmp_path: Path):
    req = ChildRequest(
        env_id="Hopper-v5",
        reward_source=FORGED_COUNTS,
        timesteps=1024,
        ppo={"n_steps": 64},
        eval_checkpoint_episodes=0,
        record_video=False,
        max_steps=20,
        python_layers=False,
    )
    result = await run_child(job.TRAIN, req, tmp_path, timeout_s=300)
    assert result["ok"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["timesteps_done"] == 1024 and (tmp_path / "model.zip").exists()
    assert "answered out of format" in summary["fault"] and summary["nonfinite_rewards"] is None
    assert train_result("p/", summary).fault == summary["fault"]


SLOW_MODULE = """
spent = 0
for i in range(3_000_000):
    spent += i


def reward_fn(obs, action, next_obs, info):
    return 0.0, {"zero": 0.0}
"""


def test_the_module_bodies_of_all_instances_share_one_budget(box, monkeypatch):
    from activities.sandbox import reward_client

    rewards = SandboxRewards(box, SLOW_MODULE, "reward_fn.py")
    monkeypatch.setattr(reward_client, "MODULE_BUDGET_S", rewards._module_s * 2.5)
    rewards.new_instance()  # the one the load made
    with pytest.raises(RewardLoadError, match="running the module for each env took over"):
        for _ in range(10):
            rewards.new_instance()


# Names that break a file write (a lone surrogate) or print as another name ("forward" with a
# variation selector, a Hangul filler, a zero-width joiner): issue 42.
UNPLAIN_NAMES = ["for\\ud800ward", "forward\\ufe0f", "\\u3164forward", "for\\u200dward", ""]
DECLARED_NAME = """
class Named(RewardFunction):
    terms = ["{name}"]

    def compute(self, obs, action, next_obs, info):
        return 0.0, {{"{name}": 0.0}}
"""
RETURNED_NAME = """
class Named(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        return 0.0, {{"ok": 0.0, "{name}": 0.0}}
"""


@pytest.mark.parametrize(
    "name", UNPLAIN_NAMES, ids=["surrogate", "selector", "filler", "zwj", "empty"]
)
def test_a_term_name_that_is_not_plain_text_is_the_rewards_error(box, name: str):
    """Refused where it crosses from the sandbox, as the code's fault, whether declared at load
    or first returned by a call, before training or a file write ever holds it."""
    with pytest.raises(RewardLoadError, match="print as something else"):
        SandboxRewards(box, DECLARED_NAME.format(name=name), "reward_fn.py")
    rewards = SandboxRewards(box, RETURNED_NAME.format(name=name), "reward_fn.py")
    rid = rewards.new_instance()
    obs, act, nxt = _columns(1)
    with pytest.raises(RewardLoadError, match="print as something else"):
        rewards.score_columns([rid], np.zeros(1, bool), obs, act, nxt, {})


NEW_NAMES_EVERY_ROW = """
class Sprawling(RewardFunction):
    def __init__(self):
        self.k = 0

    def compute(self, obs, action, next_obs, info):
        self.k += 1
        return 0.0, {f"n{self.k}_{j}": 0.0 for j in range(16)}
"""


def test_a_reply_naming_too_many_terms_is_refused_before_it_is_decoded(box):
    """16 new names on each of 2,048 rows (under 1 MB on the wire) once cost the runner one
    array of 2,048 floats per distinct name, half a gigabyte, before the name budget was
    checked (issue 42): the budget is now counted while the rows are read."""
    rewards = SandboxRewards(box, NEW_NAMES_EVERY_ROW, "reward_fn.py")
    n = 2048
    rids = [rewards.new_instance() for _ in range(1)] * n
    obs, act, nxt = _columns(n)
    tracemalloc.start()
    try:
        with pytest.raises(RewardLoadError, match=f"more than {MAX_TERMS} distinct term names"):
            rewards.score_columns(rids, np.zeros(n, bool), obs, act, nxt, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    print(f"runner's peak traced memory on the sprawling reply: {peak / 2**20:.1f} MiB")


SLOW_BUT_LEGAL = """
import numpy as np


class Slow(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        # Some milliseconds of arithmetic: well inside the per-call budget, but on every step.
        x = np.linalg.inv(np.eye(300) + np.ones((300, 300)) * 1e-3)
        return float(x[0, 0]) * 0.0, {"x": 0.0}
"""


def test_a_reward_slow_enough_to_stall_training_is_its_own_fault(box, monkeypatch):
    """Each call inside its budget, the batch past what training can wait: once the trainer's
    stall limit fired first and blamed the infrastructure (issue 42). The read's cap, under
    the stall limit, ends it as the reward's error, with what to change (cap lowered here to
    keep the test short; test_timeouts keeps the real one under the stall limit)."""
    from activities.sandbox import reward_client

    monkeypatch.setattr(reward_client, "SCORE_READ_MAX_S", 2.0)
    rewards = SandboxRewards(box, SLOW_BUT_LEGAL, "reward_fn.py")
    rid = rewards.new_instance()
    n = 2048
    obs, act, nxt = _columns(n)
    with pytest.raises(RewardLoadError, match=r"scoring 2,048 steps took over 2 s .* stall") as e:
        rewards.score_columns([rid] * n, np.zeros(n, bool), obs, act, nxt, {})
    # With the line it was running, asked when the deadline passed: what the fixer changes.
    assert re.search(r"\(it was at reward_fn\.py line [89]\)", str(e.value)), str(e.value)
