"""The vision-language judge: Gemini is shown the mp4, the others at least 16 timed frames; both
are told the robot and the camera."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.envs.catalog import ENVS
from activities.llm.agents.vlm import ROBOTS, TRACKED, scene_text
from activities.llm.frames import frames_for, timed_frames, video_length
from activities.llm.judging_activities import vlm_criteria, vlm_judge
from activities.training.rollout import Mp4Writer
from activities.training.sim import TRACKING_CAMERA
from tests.fakes.llm_server import FakeLLMServer, Tools
from workflows.contracts.judging import Criterion, VisualCriterion
from workflows.contracts.llm import VisualCriteriaRequest, VlmJudgeRequest

CRITERIA = [
    VisualCriterion(name="runs_forward", look_for="the body moves to the right"),
    VisualCriterion(name="upright", look_for="the back stays on top"),
]


def video(tmp_path: Path, frames: int = 40) -> bytes:
    path = tmp_path / "eval.mp4"
    writer = Mp4Writer(path, 20)
    for i in range(frames):
        frame = np.zeros((96, 96, 3), dtype=np.uint8)
        frame[:, (i * 2) % 96 :] = 200  # something that changes
        writer.add(frame)
    writer.close()
    return path.read_bytes()


def test_frames_are_spread_over_the_episode(tmp_path):
    jpegs = [f.jpeg for f in timed_frames(video(tmp_path), n=8, size=64).frames]
    assert len(jpegs) == 8 and all(j[:2] == b"\xff\xd8" for j in jpegs)  # JPEG magic


@pytest.fixture
def fake(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    server.reset()
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url("gemini"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    return server


VERDICTS = {
    "verdicts": [
        {"name": "runs_forward", "verdict": "met", "reason": "moves right all along"},
        {"name": "upright", "verdict": "partly", "reason": "tips over at 3 s"},
    ]
}


def test_gemini_watches_the_video(s3, fake, tmp_path):
    key = ArtifactStore().put_bytes("sessions/v/iter_1/r/videos/eval.mp4", video(tmp_path))
    fake.push("gemini", Tools([("submit_visual_judgment", VERDICTS)]))
    req = VlmJudgeRequest(
        session_id="v", prompt="run forward", llm_model="gemini-2.5-pro", video_key=key,
        criteria=CRITERIA,
    )  # fmt: skip
    judged = ActivityEnvironment().run(vlm_judge, req)
    assert judged.shown == "video" and judged.score == pytest.approx(0.75)
    assert [v.verdict for v in judged.verdicts] == ["met", "partly"]
    body = json.dumps(fake.requests_for("gemini")[0].body)
    assert "video/mp4" in body
    # The verdicts also land next to the video, for people and the dashboard.
    saved = json.loads(ArtifactStore().get_text("sessions/v/iter_1/r/visual_judgment.json"))
    assert saved["score"] == 0.75 and saved["verdicts"][1]["reason"] == "tips over at 3 s"


def test_claude_sees_timed_frames_and_a_missing_verdict_is_not_met(s3, fake, tmp_path):
    key = ArtifactStore().put_bytes("sessions/v/iter_1/r/videos/eval.mp4", video(tmp_path))
    fake.push(
        "anthropic", Tools([("submit_visual_judgment", {"verdicts": VERDICTS["verdicts"][:1]})])
    )
    req = VlmJudgeRequest(
        session_id="v", prompt="run forward", llm_model="claude-sonnet-4-6", video_key=key,
        criteria=CRITERIA, frames=6, env_id="Humanoid-v5",
    )  # fmt: skip
    judged = ActivityEnvironment().run(vlm_judge, req)
    # An image-only model sees at least 16 frames, whatever the request's old default asked.
    assert judged.shown == "16 frames" and judged.verdicts[1].verdict == "not_met"
    content = fake.requests_for("anthropic")[0].body["messages"][0]["content"]
    images = [i for i, part in enumerate(content) if part.get("type") == "image"]
    assert len(images) == 16
    assert base64.b64decode(content[images[0]]["source"]["data"])[:2] == b"\xff\xd8"
    # Each frame comes right after its time: 40 frames at 20 fps last 1.95 s.
    captions = [content[i - 1]["text"] for i in images]
    assert captions[0] == "Frame 1 at t = 0.00 s" and captions[-1] == "Frame 16 at t = 1.95 s"
    text = content[-1]["text"]
    assert "16 frames of the 1.9 s episode" in text and "0.00, 0.15" in text
    # The judge knows the robot, that the camera follows the body, and how long episodes last.
    assert "three-dimensional humanoid" in text and "The camera follows the body" in text
    assert "1000 steps of 0.015 s (15 s)" in text and "1-2 m" in text


def test_the_scene_is_said_for_every_env():
    for env_id in ENVS:
        assert env_id in ROBOTS and env_id in scene_text(env_id)
    # The judge's word on the camera matches how the renderer draws each env.
    assert TRACKED == TRACKING_CAMERA
    assert "fixed camera" in scene_text("Reacher-v5") and scene_text("") == ""


def test_frame_count_follows_the_episode_length(tmp_path):
    assert frames_for(15.0) == 16 and frames_for(25.0) == 25 and frames_for(50.0) == 32
    assert frames_for(5.0, asked=20) == 20
    picked = timed_frames(video(tmp_path), 5, size=64)
    assert [f.time_s for f in picked.frames] == [0.0, 0.5, 1.0, 1.45, 1.95]
    assert picked.duration_s == pytest.approx(1.95) and picked.fps == 20
    assert video_length(video(tmp_path)) == (pytest.approx(1.95), 20)


def test_visual_criteria_from_the_intent_and_the_robot(fake):
    items = [{"name": "moves", "look_for": "x"}, {"name": "upright", "look_for": "y"}]
    fake.push("anthropic", Tools([("submit_visual_criteria", {"criteria": items})]))
    req = VisualCriteriaRequest(
        session_id="v", prompt="run forward", llm_model="claude-sonnet-4-6", env_id="Hopper-v5"
    )
    out = ActivityEnvironment().run(vlm_criteria, req)
    assert [c.name for c in out.criteria] == ["moves", "upright"] and out.usage is not None
    user = fake.requests_for("anthropic")[0].prompt().user
    assert "run forward" in user and "one-legged hopper" in user
    assert "floor sliding past" in user and "+x (forward) is to the right" in user


MEASURED = [
    Criterion(
        name="speed",
        description="It runs forward.",
        measure="mean forward velocity of the torso",
        target=2.0,
        direction="near",
        tolerance=0.2,
        unit="m/s",
    ),
    Criterion(name="height", description="It stays up.", metric="min_torso_z", target=0.4),
]


def test_the_video_judge_is_told_what_the_trajectory_judge_measures(s3, fake, tmp_path):
    key = ArtifactStore().put_bytes("sessions/v/iter_1/r/videos/eval.mp4", video(tmp_path))
    fake.push("anthropic", Tools([("submit_visual_judgment", VERDICTS)]))
    req = VlmJudgeRequest(
        session_id="v", prompt="run forward", llm_model="claude-sonnet-4-6", video_key=key,
        criteria=CRITERIA, measured=MEASURED, env_id="HalfCheetah-v5",
    )  # fmt: skip
    ActivityEnvironment().run(vlm_judge, req)
    text = fake.requests_for("anthropic")[0].body["messages"][0]["content"][-1]["text"]
    # Each measured criterion with its comparison, target, tolerance and unit, beside (and
    # before) the visual criteria the video judge gives verdicts on.
    measured = text.index("# What the trajectory judge measures")
    assert measured < text.index("# Visual criteria (yours to judge)")
    assert "- `speed`: It runs forward. Measured: mean forward velocity of the torso." in text
    assert "Target: near 2.00 m/s ± 0.20 m/s." in text
    assert "- `height`: It stays up. Measured: min_torso_z. Target: at least 0.40." in text
    assert "`runs_forward`: the body moves to the right" in text
    system = fake.requests_for("anthropic")[0].prompt().system
    assert "consistent with them" in system


def test_visual_criteria_are_written_beside_the_measured_ones(fake):
    items = [{"name": "moves", "look_for": "x"}, {"name": "upright", "look_for": "y"}]
    fake.push("anthropic", Tools([("submit_visual_criteria", {"criteria": items})]))
    req = VisualCriteriaRequest(
        session_id="v", prompt="run forward", llm_model="claude-sonnet-4-6", env_id="Hopper-v5",
        measured=MEASURED,
    )  # fmt: skip
    ActivityEnvironment().run(vlm_criteria, req)
    user = fake.requests_for("anthropic")[0].prompt().user
    assert "# What the trajectory judge measures" in user and "near 2.00 m/s ± 0.20" in user
