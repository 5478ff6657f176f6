"""judge_rollout reads the trajectory from the store and writes the judgment next to it."""

from __future__ import annotations

import json

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import activities.judging.activities as judge_activities
from activities.judging.activities import JUDGE_ACTIVITIES, judge_rollout, judgment_key
from activities.llm.offline import match_intent
from tests.activities.judging.test_code_judge import synthetic
from workflows.contracts.judging import JudgeRequest, Judgment

TRAJ = "sessions/s/iter_1/c0_default_seed_0/trajectories/eval.npz"


class MemoryStore:
    objects: dict[str, bytes] = {}

    def get_bytes(self, key: str) -> bytes:
        return self.objects[key]

    def put_bytes(self, key: str, data: bytes, content_type: str = "") -> str:
        self.objects[key] = data
        return key

    def list_keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix))


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    MemoryStore.objects = {}
    monkeypatch.setattr(judge_activities, "ArtifactStore", MemoryStore)
    return MemoryStore.objects


def _request() -> JudgeRequest:
    criteria = match_intent("run forward as fast as possible", "HalfCheetah-v5").criteria
    return JudgeRequest(
        env_id="HalfCheetah-v5", trajectory_key=TRAJ, criteria=criteria, pass_threshold=0.8
    )


def test_registered_name():
    names = [fn.__temporal_activity_definition.name for fn in JUDGE_ACTIVITIES]
    assert names == ["judge_rollout", "session_tool"]


async def test_judge_rollout_judges_and_stores_the_judgment(store: dict[str, bytes]):
    store[TRAJ] = synthetic("HalfCheetah-v5", 100, vx=0.3)
    judgment = await ActivityEnvironment().run(judge_rollout, _request())
    assert isinstance(judgment, Judgment) and not judgment.passed
    assert "too_slow" in judgment.failure_tags
    key = judgment_key(TRAJ)
    assert key == "sessions/s/iter_1/c0_default_seed_0/judgment.json"
    assert json.loads(store[key])["score"] == judgment.score


async def test_an_unreadable_trajectory_is_non_retryable(store: dict[str, bytes]):
    store[TRAJ] = b"not an npz"
    with pytest.raises(ApplicationError) as info:
        await ActivityEnvironment().run(judge_rollout, _request())
    assert info.value.type == "TrajectoryInvalid" and info.value.non_retryable
    assert TRAJ in info.value.message


async def test_evaluation_checkpoints_are_judged_too(store: dict[str, bytes]):
    store[TRAJ] = synthetic("HalfCheetah-v5", 100, vx=2.5)
    prefix = "sessions/s/iter_1/c0_default_seed_0/evals/"
    for pct, vx in (("25", 0.2), ("50", 1.0), ("100", 2.5)):
        for name in ("p10", "median", "p90"):
            store[f"{prefix}pct_{pct}/{name}.npz"] = synthetic("HalfCheetah-v5", 100, vx=vx)
    judgment = await ActivityEnvironment().run(judge_rollout, _request())
    assert list(judgment.checkpoints) == ["25", "50", "100"]
    scores = list(judgment.checkpoints.values())
    assert scores == sorted(scores) and scores[-1] == judgment.score
    assert "Over training (25/50/100% of the steps)" in judgment.diagnosis
    # What was measured at each checkpoint: the forward speed the episodes ran at.
    speed = next(c.name for c in _request().criteria if "speed" in c.name or "vel" in c.name)
    speeds = [judgment.checkpoint_measured[pct][speed] for pct in ("25", "50", "100")]
    assert speeds == pytest.approx([0.2, 1.0, 2.5], rel=0.05)


def test_checkpoint_episodes_leave_out_the_saved_normaliser(store: dict[str, bytes]):
    head = "sessions/s/iter_1/c0_default_seed_0/evals/pct_"
    for name in ("p10.npz", "median.npz", "vecnormalize.npz", "model.zip"):
        store[f"{head}25/{name}"] = b""
    found = judge_activities.checkpoint_trajectories(MemoryStore(), TRAJ)
    assert found == {"25": [f"{head}25/median.npz", f"{head}25/p10.npz"]}
