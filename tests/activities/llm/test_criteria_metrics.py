"""The elicitor may name a behaviour-library metric per criterion: it is shown the env's metrics
with their labels and units, and a metric the env lacks or a `near` criterion without a
tolerance is a retryable bad answer naming the field."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from activities.llm.agents import criteria as criteria_agent
from activities.llm.agents.context import criteria_text
from tests.fakes.llm_server import FakeLLMServer, Tools


def _items(**speed: object) -> list[dict]:
    base = {"name": "speed", "description": "runs", "measure": "mean v_x", "target": 2.0}
    others = [
        {"name": n, "description": n, "measure": "m", "target": 1.0} for n in ("upright", "calm")
    ]
    return [{**base, **speed}, *others]


def test_a_criterion_naming_a_metric_of_the_env_gets_its_unit():
    parsed = criteria_agent.parse_criteria(_items(metric="mean_x_velocity"), "HalfCheetah-v5")
    assert parsed[0].metric == "mean_x_velocity" and parsed[0].unit == "m/s"
    assert [c.metric for c in parsed[1:]] == [None, None]
    # The judge author reads which library measure checks its value.
    assert "measures it as `mean_x_velocity` (mean forward velocity, m/s)" in criteria_text(parsed)


@pytest.mark.parametrize(
    ("speed", "field"),
    [
        # A planar body cannot turn about the vertical: no yaw rate in its library.
        ({"metric": "mean_yaw_rate"}, "criterion 'speed' field metric: 'mean_yaw_rate' is not"),
        ({"metric": "fastness"}, "field metric: 'fastness' is not a behaviour-library metric"),
        ({"metric": "mean_x_velocity", "unit": "km/h"}, "field unit: its metric mean_x_velocity"),
        ({"direction": "near"}, "criterion 'speed' field tolerance: a 'near' criterion needs"),
        ({"direction": "near", "tolerance": -0.1}, "field tolerance"),
    ],
)
def test_an_unusable_metric_or_tolerance_is_a_retryable_bad_answer(speed: dict, field: str):
    with pytest.raises(ApplicationError) as info:
        criteria_agent.parse_criteria(_items(**speed), "HalfCheetah-v5")
    assert info.value.type == "LLMBadAnswer" and not info.value.non_retryable
    assert field in info.value.message


def test_the_env_metrics_are_listed_with_labels_and_units():
    text = criteria_agent.metrics_text("HalfCheetah-v5")
    assert "- `mean_x_velocity`: mean forward velocity, m/s" in text
    assert "- `mean_uprightness`: mean uprightness\n" in text
    assert "mean_yaw_rate" not in text
    assert "- `mean_yaw_rate`: mean counter-clockwise yaw rate, rad/s" in (
        criteria_agent.metrics_text("Ant-v5")
    )


def test_the_elicitor_is_shown_the_metrics_and_may_name_one(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
):
    server.reset()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    answer = _items(metric="mean_x_velocity")
    server.push("anthropic", Tools([("submit_criteria", {"criteria": answer})]))
    criteria, _ = criteria_agent.elicit("run forward", "HalfCheetah-v5", "claude-sonnet-4-6")
    assert criteria[0].metric == "mean_x_velocity"
    sent = server.requests_for("anthropic")[0]
    user = sent.prompt().user
    assert "# Behaviour-library metrics of this environment" in user
    assert "- `max_height`: peak torso height, m" in user
    schema = sent.body["tools"][0]["input_schema"]["properties"]["criteria"]["items"]
    assert "metric" in schema["properties"]
