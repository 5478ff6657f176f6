"""The offline author matches what it can express and refuses, plainly, what it cannot."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from activities.behaviours.metrics import METRICS, available_metrics
from activities.envs.catalog import facts
from activities.llm.offline import OfflineAuthor, match_intent
from activities.llm.offline.rendering.render import num, render_reward

DEV_INTENTS = Path(__file__).with_name("dev_intents.csv")
SHARED_INTENTS = Path("/work/shared/cases/dev_intents.csv")

# What the offline author does with each dev intent: a template name, or None (refused).
# "do a backflip" was refused until flips were phased (crouch, launch, rotate, land; issue 32).
EXPECTED = {
    ("HalfCheetah-v5", "run forward as fast as possible"): "forward",
    ("HalfCheetah-v5", "do a backflip"): "composed",
    ("Ant-v5", "walk forward"): "forward",
    ("Ant-v5", "stand on the rear legs"): "rear_up",
    ("Hopper-v5", "hop forward"): "forward",
    ("Hopper-v5", "jump as high as possible"): "jump",
    ("Walker2d-v5", "walk forward naturally"): "forward",
    ("Walker2d-v5", "sprint with high knees"): "composed",
    ("Humanoid-v5", "walk forward with a natural gait"): "forward",
    ("Humanoid-v5", "perform a deep squat"): "hold_height",
    ("Swimmer-v5", "swim forward"): "forward",
    ("Reacher-v5", "reach the target quickly and hold still"): "reach",
    ("InvertedPendulum-v5", "keep the pole balanced"): "balance",
    ("HumanoidStandup-v5", "sit up and stay sitting"): "hold_height",
}


def _rows(path: Path) -> list[tuple[str, str, str]]:
    with path.open() as f:
        return [(r["env_id"], r["intent"], r["category"]) for r in csv.DictReader(f)]


def test_expectations_cover_the_dev_intents():
    rows = _rows(DEV_INTENTS)
    assert {(e, i) for e, i, _ in rows} == set(EXPECTED)
    if SHARED_INTENTS.exists():  # the copy here must not drift from the shared case list
        assert _rows(SHARED_INTENTS) == rows


@pytest.mark.parametrize(("env_id", "intent", "category"), _rows(DEV_INTENTS))
def test_every_dev_intent_is_matched_or_refused(env_id: str, intent: str, category: str):
    expected = EXPECTED[(env_id, intent)]
    if category in ("locomotion", "balance", "reaching"):
        assert expected is not None, "locomotion, balance and reaching rows must be matched"
    if expected is None:
        with pytest.raises(ApplicationError) as info:
            match_intent(intent, env_id)
        _assert_refusal(info.value, intent, env_id)
        return
    match = match_intent(intent, env_id)
    assert match.template == expected
    assert 1 <= len(match.criteria) <= 4
    supported = available_metrics(env_id)
    authored = OfflineAuthor().author(intent, env_id)
    for c in match.criteria:
        # A criterion without a built-in metric is measured by the author's judge code.
        assert c.metric in supported or (c.metric is None and authored.judge), c
        assert c.weight > 0
        # Every verdict reads in the measure's unit ("3.95 m/s at least 2 m/s").
        if c.metric is not None:
            assert c.unit == METRICS[c.metric].unit, c


def _assert_refusal(err: ApplicationError, intent: str, env_id: str) -> None:
    assert err.type == "IntentNotSupported"
    assert err.non_retryable
    msg = err.message
    assert "\n" not in msg
    assert msg.startswith(f"the offline author (no LLM) cannot express '{intent}' on {env_id}: ")
    assert msg.endswith(
        "set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY and pass --llm MODEL to use a "
        "language model"
    )


def test_a_backflip_is_phased_and_a_style_is_listed_as_not_measured():
    flip = OfflineAuthor().author("do a backflip", "HalfCheetah-v5")
    assert [c.name for c in flip.criteria] == ["flips", "lands_upright", "airborne"]
    assert "SHAPING = {'phases'" in flip.reward.code and flip.judge is not None
    # A style it cannot measure never refuses a behaviour it can express.
    sprint = OfflineAuthor().author("sprint gracefully", "Walker2d-v5")
    assert sprint.reward.template == "forward" and sprint.unmeasured == ["gracefully"]
    assert sprint.reward.summary.endswith("Not measured: gracefully.")


def test_run_forward_as_fast_as_possible_on_halfcheetah():
    match = match_intent("run forward as fast as possible", "HalfCheetah-v5")
    speed = match.criteria[0]
    assert (speed.metric, speed.direction, speed.target) == ("mean_x_velocity", "at_least", 2.0)
    assert speed.target == facts("HalfCheetah-v5").reachable_speed
    assert [c.metric for c in match.criteria] == ["mean_x_velocity", "mean_uprightness"]
    assert match.params == {
        "forward_weight": 1.0,
        "direction": 1.0,
        "speed_cap": 0.0,
        "ctrl_weight": 0.1,
        "healthy_bonus": 0.0,
    }


def test_a_plain_walk_on_a_body_that_falls_pays_no_more_above_twice_its_target():
    hop = match_intent("hop forward", "Hopper-v5")
    target = hop.criteria[0].target
    assert hop.params["speed_cap"] == pytest.approx(2.0 * target)
    rendered = render_reward(hop.template, "Hopper-v5", hop.params, "hop forward")
    assert rf"\min(\dot{{x}}_t, {num(2.0 * target)})" in rendered.latex
    assert f"up to {num(2.0 * target)} m/s" in rendered.summary
    # Asked for speed, or on a body that cannot fall, nothing is capped.
    assert match_intent("hop forward as fast as possible", "Hopper-v5").params["speed_cap"] == 0
    assert match_intent("swim forward", "Swimmer-v5").params["speed_cap"] == 0


def test_ant_walks_with_its_own_weights_not_the_envs():
    params = match_intent("walk forward", "Ant-v5").params
    assert (params["forward_weight"], params["ctrl_weight"], params["healthy_bonus"]) == (
        2.0,
        0.05,
        0.25,
    )
    # "naturally" still doubles the (Ant's) control weight.
    assert match_intent("walk forward naturally", "Ant-v5").params["ctrl_weight"] == 0.1


def test_envs_that_end_early_get_a_staying_healthy_criterion():
    for env_id, prompt in (("Hopper-v5", "hop forward"), ("Ant-v5", "walk forward")):
        metrics = [c.metric for c in match_intent(prompt, env_id).criteria]
        assert "alive_fraction" in metrics


@pytest.mark.parametrize(
    ("prompt", "env_id", "template", "params"),
    [
        ("run backward", "HalfCheetah-v5", "forward", {"direction": -1.0}),
        ("walk forward at 1.5 m/s", "Walker2d-v5", "track_speed", {"target_speed": 1.5}),
        ("walk forward slowly", "Ant-v5", "track_speed", {"target_speed": 0.32}),
        ("spin clockwise in place", "Ant-v5", "spin", {"direction": -1.0, "drift_weight": 0.5}),
        ("spin counter-clockwise", "Swimmer-v5", "spin", {"direction": 1.0}),
        ("stand up", "HumanoidStandup-v5", "stand", {}),
        ("stand still", "Hopper-v5", "stand", {"still_weight": 0.5}),
        ("jump as high as possible", "Walker2d-v5", "jump", {"base_height": 1.25}),
        ("keep the pole balanced", "InvertedDoublePendulum-v5", "balance", {}),
        ("crouch low", "Walker2d-v5", "hold_height", {"target_height": 0.95}),
        ("reach the target", "Reacher-v5", "reach", {"still_weight": 0.0}),
    ],
)
def test_other_intents(prompt: str, env_id: str, template: str, params: dict[str, float]):
    match = match_intent(prompt, env_id)
    assert match.template == template
    for key, value in params.items():
        assert match.params[key] == pytest.approx(value)


@pytest.mark.parametrize(
    ("prompt", "env_id", "why"),
    [
        ("swim forward", "Ant-v5", "swimming body"),
        ("walk forward", "Swimmer-v5", "needs legs"),
        ("keep the pole balanced", "HalfCheetah-v5", "has no pole"),
        ("walk forward", "Reacher-v5", "no free-moving body"),
        ("walk forward", "HumanoidStandup-v5", "Humanoid-v5 walks"),
        ("lie down", "Hopper-v5", "tilts more than 0.2 rad"),
        ("reach the target", "Ant-v5", "Reacher-v5"),
        ("spin", "Hopper-v5", "not one of them"),
        ("run forward and jump", "HalfCheetah-v5", "several behaviours"),
        ("make a sandwich", "Ant-v5", "names no behaviour"),
        ("zorp the flibbet", "Ant-v5", "it does not know 'zorp flibbet'"),
    ],
)
def test_refusals(prompt: str, env_id: str, why: str):
    with pytest.raises(ApplicationError) as info:
        match_intent(prompt, env_id)
    _assert_refusal(info.value, prompt, env_id)
    assert why in info.value.message


def test_refusal_message_stays_on_one_line():
    with pytest.raises(ApplicationError) as info:
        match_intent("juggle\nthree\r\nballs", "HalfCheetah-v5")
    assert "\n" not in info.value.message and "\r" not in info.value.message


def test_unknown_env_is_invalid_input():
    with pytest.raises(ApplicationError) as info:
        match_intent("run forward", "Cheetah-v9")
    assert info.value.type == "InvalidInput" and info.value.non_retryable


def test_authoring_is_deterministic_and_code_matches_the_artifact():
    a = OfflineAuthor().author("run forward as fast as possible", "HalfCheetah-v5")
    b = OfflineAuthor().author("run forward as fast as possible", "HalfCheetah-v5")
    assert a.reward.code == b.reward.code
    code = a.reward.code
    assert "class ForwardReward(RewardFunction):" in code
    assert "FORWARD_WEIGHT = 1.0\n" in code and "CTRL_WEIGHT = 0.1\n" in code
    assert "healthy" not in a.reward.terms  # no alive bonus on an env that never ends early
    assert a.reward.terms == ["forward", "ctrl"]
    assert a.reward.latex == r"r_t = 1.0\,\dot{x}_t - 0.1\,\lVert a_t \rVert^2"
    assert a.reward.summary.startswith("Reward: forward velocity along x (weight 1.0)")


def test_prompt_cannot_break_out_of_the_code_comment():
    from activities.llm.offline.rendering.render import render_reward

    evil = 'run forward\nimport os; os.system("x")\n"""'
    reward = render_reward(
        "forward",
        "HalfCheetah-v5",
        {"forward_weight": 1.0, "direction": 1.0, "ctrl_weight": 0.1, "healthy_bonus": 0.0},
        evil,
    )
    assert reward.code.splitlines()[0].startswith("# Reward for ")
    assert not any(line.startswith("import os") for line in reward.code.splitlines())


def test_candidates_of_a_template_reward_weigh_the_control_cost_differently():
    author = OfflineAuthor()
    rewards = [
        author.author("run forward as fast as possible", "HalfCheetah-v5", candidate=k).reward
        for k in range(3)
    ]
    ctrl = [r.params["ctrl_weight"] for r in rewards]
    assert ctrl[1] == pytest.approx(ctrl[0] * 0.5) and ctrl[2] == pytest.approx(ctrl[0] * 2)
    # Each candidate says its own weight where people read it.
    assert len({r.summary for r in rewards}) == 3
    assert all(r.template == rewards[0].template for r in rewards)


@pytest.mark.parametrize(
    ("prompt", "env_id", "target"),
    [
        ("run forward at 2.5 m/s", "HalfCheetah-v5", 2.5),
        ("hop ahead at 0.8 m/s", "Hopper-v5", 0.8),
        ("walk backward at 1 m/s", "Walker2d-v5", -1.0),
        ("run forward at 3 m/s with its head lowered", "HalfCheetah-v5", 3.0),
        ("trot forward at 9 km/h", "Ant-v5", 2.5),
    ],
)
def test_a_stated_speed_passes_only_within_15_percent_of_it(prompt, env_id, target):
    """A person who asks for 2.5 m/s and gets 2.04 (18 % under) did not get what they asked
    for: with every other criterion met, the judged score passes near the number and fails
    15 % away from it, either side."""
    from activities.judging.code_judge import criterion_score

    criteria = OfflineAuthor().author(prompt, env_id).criteria
    speed = next(c for c in criteria if "velocity" in c.description and c.direction == "near")
    assert speed.target == pytest.approx(abs(target), rel=1e-3)

    def score(measured: float) -> float:
        total = sum(c.weight for c in criteria)
        got = sum(
            c.weight * (criterion_score(measured, c) if c is speed else 1.0) for c in criteria
        )
        return got / total

    t = abs(target)
    assert score(t) == 1.0
    assert score(0.93 * t) >= 0.8 and score(1.07 * t) >= 0.8
    assert score(0.85 * t) < 0.8 and score(1.15 * t) < 0.8


READ_INTENTS = Path(__file__).with_name("read_intents.csv")


@pytest.mark.parametrize(("env_id", "intent", "category"), _rows(READ_INTENTS))
def test_the_trained_read_cases_are_expressed_as_their_class(env_id, intent, category):
    """The benchmark's own cases (read_intents.csv) are expressed, each as its class: a stated
    number is judged near it, a pose by a body part, a sequence and a repetition by phases."""
    authored = OfflineAuthor().author(intent, env_id)
    code = authored.reward.code
    if category == "number":
        assert any(c.direction == "near" and c.tolerance > 0 for c in authored.criteria)
    elif category == "pose":
        assert "P.part_" in code and authored.judge is not None
    elif category in ("sequence", "repetition"):
        assert "'phases'" in code and authored.judge is not None
    else:
        pytest.fail(f"read_intents.csv: unknown category {category!r}")
    if category == "repetition":
        assert any(c.name == "jumps" for c in authored.criteria)


@pytest.mark.parametrize(
    ("intent", "env_id", "clock"),
    [
        ("swim forward", "Swimmer-v5", True),
        ("swim backward at 0.1 m/s", "Swimmer-v5", True),
        ("walk forward", "Ant-v5", False),
        ("run forward", "HalfCheetah-v5", False),
    ],
)
def test_swimmer_locomotion_shows_the_policy_the_episode_clock(
    intent: str, env_id: str, clock: bool
):
    # rl-zoo's Swimmer recipe gives the policy a time feature; the offline author's Swimmer
    # locomotion rewards declare it (SHAPING clock), and say so. Other bodies do not need it.
    from activities.sandbox.loaded_reward import load_reward

    authored = OfflineAuthor().author(intent, env_id)
    loaded = load_reward(authored.reward.code, "reward.py")
    assert (loaded.shaping == {"clock": True}) is clock
    assert ("episode's clock" in authored.reward.summary) is clock
