"""What a Humanoid session's agents are told, as the providers receive it: the elicitor, the
reward author, the reviser's opening and the video verdict, rendered through the fake providers
(real SDK clients). Each carries what the language-model path promises its agents.

`POLICYFORGE_PROMPTS_OUT=DIR pytest tests/activities/llm/test_humanoid_prompts.py` also writes
each prompt to DIR/<agent>.md, to be read whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.llm.agents import criteria as criteria_agent
from activities.llm.agents import reward
from activities.llm.judging_activities import vlm_judge
from tests.activities.llm.test_reviser_tools import _request, _revise, _submit
from tests.activities.llm.test_reviser_tools import fake as fake  # the providers' fixture
from tests.activities.llm.test_vlm import video
from tests.fakes.llm_server import FakeLLMServer, Tools
from workflows.contracts.judging import Criterion, VisualCriterion
from workflows.contracts.llm import VlmJudgeRequest

ENV = "Humanoid-v5"
INTENT = "walk forward with a natural gait"
MODEL = "claude-sonnet-4-6"
CRITERIA = [
    Criterion(
        name="forward_speed",
        description="walks forward",
        measure="mean info['x_velocity'] over the episode",
        target=1.0,
        unit="m/s",
    ),
    Criterion(
        name="stays_up",
        description="does not fall",
        measure="steps before the episode ends",
        target=900,
        unit="steps",
    ),
    Criterion(
        name="alternating_feet",
        description="steps with alternating feet",
        measure="fraction of steps with exactly one foot on the floor",
        target=0.5,
    ),
]


def _keep(agent: str, system: str, user: str) -> None:
    """The prompt as sent, to DIR/<agent>.md when POLICYFORGE_PROMPTS_OUT is set."""
    out = os.environ.get("POLICYFORGE_PROMPTS_OUT")
    if out:
        text = f"# system ({len(system):,} chars)\n\n{system}\n\n# user ({len(user):,} chars)\n\n"
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{agent}.md").write_text(text + user)


def test_the_elicitor_sees_the_budget_and_what_random_actions_do(fake: FakeLLMServer):
    items = [c.model_dump() for c in CRITERIA]
    fake.push("anthropic", Tools([("submit_criteria", {"criteria": items})]))
    criteria_agent.elicit(INTENT, ENV, MODEL, budget=(2_000_000, "ppo", 3))
    sent = fake.requests_for("anthropic")[0].prompt()
    _keep("elicitor", sent.system, sent.user)
    assert "2,000,000 environment steps of PPO" in sent.user and "up to 3 iterations" in sent.user
    assert "# What random actions do" in sent.user and "348" in sent.user  # obs entries


def test_the_author_designs_first_and_is_shown_phases_rotation_and_unbounded_roots(
    fake: FakeLLMServer,
):
    code = (
        "import primitives as P\n\nclass Walk(RewardFunction):\n"
        "    def compute(self, obs, action, next_obs, info):\n"
        "        v = P.forward_velocity('Humanoid-v5', info)\n        return v, {'forward': v}\n"
    )
    fake.push(
        "anthropic", Tools([("submit_reward", {"design": "per-step: pay speed", "code": code})])
    )
    reward.author(INTENT, ENV, CRITERIA, MODEL)
    request = fake.requests_for("anthropic")[0]
    sent = request.prompt()
    _keep("reward_author", sent.system, sent.user)
    text = sent.system + sent.user
    # Point 6: a design before the code, with its checklist, and the model thinks.
    assert "Design first" in text and "The maximiser" in text
    assert request.body["thinking"] == {"type": "adaptive"}
    # Point 10: phases the policy sees, relaxed termination, a turn that never wraps, and
    # which root joints are unbounded.
    assert 'SHAPING["phases"]' in text and "healthy_z_range" in text
    assert "total_rotation" in text and "rotation_step" in text
    assert "it repeats every full turn: count flips and spins with P.total_rotation" in text
    # Point 3: the criteria with their real targets and units.
    assert "1 m/s" in text or "1.0 m/s" in text


def test_the_reviser_opening_has_measured_values_and_a_checkpoint_table(fake: FakeLLMServer):
    store = ArtifactStore()
    req = _request(store, "anthropic")
    rows = [
        {"timesteps": 16_384 * i, "ep_return_mean": 40.0 * i, "ep_len_mean": 20.0 + 6 * i}
        | {"term_forward": 0.01 * i, "term_alive": 1.0, "term_ctrl": -0.1}
        for i in range(1, 31)
    ]
    store.put_text(
        req.train.run_prefix + "metrics/scalars.jsonl", "\n".join(json.dumps(r) for r in rows)
    )
    scores = [
        s.model_copy(update={"unit": "m/s"}) if s.name == "forward_speed" else s
        for s in req.judgment.criteria
    ]
    judgment = req.judgment.model_copy(
        update={
            "criteria": scores,
            "checkpoints": {"25": 0.1, "50": 0.15, "75": 0.2, "100": 0.22},
            "checkpoint_measured": {
                pct: {"forward_speed": speed}
                for pct, speed in (("25", 0.05), ("50", 0.11), ("75", 0.18), ("100", 0.2))
            },
        }
    )
    criteria = [
        c.model_copy(update={"unit": "m/s"}) if c.name == "forward_speed" else c
        for c in req.criteria
    ]
    req = req.model_copy(
        update={"env_id": ENV, "prompt": INTENT, "judgment": judgment, "criteria": criteria}
    )
    fake.push("anthropic", Tools([("submit_revision", _submit())]))
    _revise(req)
    sent = fake.requests_for("anthropic")[0].prompt()
    _keep("reviser_opening", sent.system, sent.user)
    # Point 3: a measured physical value against the criterion's own target and unit.
    assert "measured 0.9 m/s against at least 3 m/s" in sent.user
    # Point 8: training over time at the judged checkpoints, and how to read it.
    assert "# Training over time" in sent.user and "How to read it:" in sent.user
    assert "forward_speed measured (m/s)" in sent.user and "episode length" in sent.user


def test_the_video_verdict_knows_the_robot_the_camera_and_the_frame_times(
    fake: FakeLLMServer, tmp_path: Path
):
    key = ArtifactStore().put_bytes("sessions/hp/iter_1/r/videos/eval.mp4", video(tmp_path, 60))
    looks = [
        VisualCriterion(name="walks", look_for="legs alternate while the body moves forward"),
        VisualCriterion(name="upright", look_for="the torso stays above the hips"),
    ]
    verdicts = [{"name": c.name, "verdict": "partly", "reason": "r"} for c in looks]
    fake.push("anthropic", Tools([("submit_visual_judgment", {"verdicts": verdicts})]))
    req = VlmJudgeRequest(
        session_id="hp", prompt=INTENT, llm_model=MODEL, video_key=key, criteria=looks, env_id=ENV
    )
    ActivityEnvironment().run(vlm_judge, req)
    body = fake.requests_for("anthropic")[0].body
    content = body["messages"][0]["content"]
    texts = [part["text"] for part in content if part.get("type") == "text"]
    images = sum(part.get("type") == "image" for part in content)
    system = body.get("system") or ""
    system = system if isinstance(system, str) else "".join(b["text"] for b in system)
    _keep("video_verdict", system, "\n".join(texts) + f"\n\n[{images} images between the captions]")
    # Point 5: the robot, a camera that follows it, at least 16 frames each with its time.
    assert images >= 16 and texts[0].startswith("Frame 1 at t = 0.00 s")
    assert "three-dimensional humanoid" in texts[-1] and "The camera follows the body" in texts[-1]


@pytest.fixture(autouse=True)
def _humanoid_only():
    """Every prompt here is for the Humanoid (the largest observation and spec)."""
    assert ENV == "Humanoid-v5"
