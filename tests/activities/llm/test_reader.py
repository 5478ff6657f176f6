"""The offline reader reads what people write: behaviours with direction and speed, numbers with
units, limits and negations, durations and repetition, body-part poses, sequences, and styles it
lists as not measured instead of refusing."""

from __future__ import annotations

import math
import re

import pytest

from activities.llm.offline.behaviours.matcher import match_intent
from activities.llm.offline.reading.reader import read
from activities.llm.offline.words.refusals import NotExpressible
from activities.llm.offline.words.tokens import lemma, normalize


def test_tokens_split_units_numbers_and_clauses():
    assert normalize("Sprint at 2.5m/s, then walk 3s; 90° and 1,000 steps") == [
        "sprint", "at", "2.5", "mps", ",", "then", "walk", "3", "s", ",", "90", "deg", "and",
        "1000", "steps",
    ]  # fmt: skip
    assert normalize("jump two times, counter-clockwise, don't fall") == [
        "jump", "2", "times", ",", "counter", "clockwise", ",", "do", "not", "fall",
    ]  # fmt: skip
    # A contraction and an auxiliary before "not" read as "do not"; speeds in words.
    assert normalize("it shouldn't fall, it mustn't stop") == [
        "it", "do", "not", "fall", ",", "it", "do", "not", "stop",
    ]  # fmt: skip
    assert normalize("at 50 cm/s") == ["at", "50", "cmps"]
    # "one knee", "two poles": which parts, not a count.
    assert normalize("raise one knee") == ["raise", "one", "knee"]
    assert normalize("balance the two poles")[-2:] == ["two", "poles"]


@pytest.mark.parametrize(
    ("word", "base"),
    [("running", "run"), ("hopped", "hop"), ("moves", "move"), ("lying", "lie"), ("ran", "run")],
)
def test_inflections_find_their_lemma(word: str, base: str):
    assert lemma(word, {"run", "hop", "move", "lie"}) == base


@pytest.mark.parametrize(
    ("prompt", "speed", "target", "band"),
    [
        ("run forward at 2.5 m/s", "exact", 2.5, (None, None)),
        ("run forward at 9 km/h", "exact", 2.5, (None, None)),
        ("run forward at 2.5 meters per second", "exact", 2.5, (None, None)),
        ("walk forward no quicker than 1 m/s", "band", None, (None, 1.0)),
        ("walk forward at most 2 m/s", "band", None, (None, 2.0)),
        ("walk forward at least 1 m/s", "band", None, (1.0, None)),
        ("walk forward between 1 and 2 m/s", "band", None, (1.0, 2.0)),
        ("walk forward at an easy pace", "slow", None, (None, None)),
        ("sprint", "max", None, (None, None)),
        ("stroll ahead", "slow", None, (None, None)),
    ],
)
def test_speeds_limits_and_ranges(prompt, speed, target, band):
    step = read(prompt).steps[0]
    assert step.speed == speed and step.speed_range == band
    assert step.target_speed == (pytest.approx(target) if target else None)


def test_numbers_with_units_go_where_they_belong():
    assert read("jump 0.5 m high").steps[0].height == 0.5
    assert read("jump 50 cm high").steps[0].height == pytest.approx(0.5)
    assert read("jump 0.5 m high").steps[0].height_rise
    assert not read("jump to a height of 1.8 m").steps[0].height_rise
    assert read("walk forward for 3 seconds").steps[0].duration == 3.0
    assert read("walk forward for 200 steps").steps[0].duration_steps == 200
    assert read("stand up within 2 seconds").steps[0].deadline == 2.0
    assert read("turn left 90 degrees").steps[0].angle == pytest.approx(math.pi / 2)
    assert read("walk 5 meters forward").steps[0].distance == 5.0
    assert read("spin 3 full turns").steps[0].count == 3
    assert read("spin at 2 rad/s").steps[0].rate == 2.0


@pytest.mark.parametrize(
    ("prompt", "why"),
    [
        ("stand up at 2 m/s", "a speed (2 m/s) qualifies a gait, not stand"),
        ("run forward 3", "has no unit"),
        ("reach the target 2 m high", "says nothing the offline author measures for reach"),
    ],
)
def test_a_number_that_fits_no_behaviour_is_refused(prompt, why):
    with pytest.raises(NotExpressible, match=re.escape(why)):
        read(prompt)


def test_negations_and_qualifiers():
    q = read("walk forward without going backward, keeping its balance").steps[0].qualifiers
    assert {"no_backward", "no_fall"} <= q
    assert "whole_episode" in read("run forward for the entire run").steps[0].qualifiers
    assert "no_fall" in read("please run forwards and don't flip over").steps[0].qualifiers


@pytest.mark.parametrize(
    ("prompt", "cores"),
    [
        ("sprint, then slow to a walk", ["locomotion", "locomotion"]),
        ("walk forward, after that stop", ["locomotion", "stop"]),
        ("walk forward, then sprint, and finally stop", ["locomotion", "locomotion", "stop"]),
        ("crouch before jumping", ["squat", "jump"]),
        ("walk forward after standing up", ["stand", "locomotion"]),
        ("after standing up, walk forward", ["stand", "locomotion"]),
        ("sit, then get up", ["sit", "stand"]),
        ("get up and walk", ["stand", "locomotion"]),
        ("sit down and stand up, three times", ["sit", "stand"] * 3),
    ],
)
def test_sequences(prompt, cores):
    assert [s.core for s in read(prompt).steps] == cores


def test_a_qualifier_after_then_belongs_to_the_step_before_unless_it_moved():
    steps = read("stand up, then hold still").steps
    assert [s.core for s in steps] == ["stand"] and "still" in steps[0].qualifiers
    assert [s.core for s in read("run forward, then hold still").steps] == ["locomotion", "stop"]


@pytest.mark.parametrize(
    ("prompt", "count", "repeat"),
    [
        ("jump twice", 2, False),
        ("jump 3 times", 3, False),
        ("do 4 jumps", 4, False),
        ("jump again and again", None, True),
        ("keep jumping", None, True),
        ("hop up and down repeatedly", None, True),
        ("do a double backflip", 2, False),
    ],
)
def test_repetitions(prompt, count, repeat):
    step = read(prompt).steps[0]
    assert (step.count, step.repeat) == (count, repeat)


@pytest.mark.parametrize(
    ("prompt", "poses"),
    [
        ("stand with its arms out to the sides", {"arms_out"}),
        ("stand with its arms stretched out wide", {"arms_out"}),
        ("raise both arms", {"arms_up"}),
        ("hold both arms straight up", {"arms_up"}),
        ("stand with arms raised above its head", {"arms_up"}),
        ("stand with a wide stance and arms at its sides", {"wide_stance", "arms_down"}),
        ("walk with its head lowered", {"head_down"}),
        ("raise one knee", {"knee_up"}),
        ("stand on one leg", {"one_foot"}),
        ("walk with its rear legs off the ground", {"rear_feet_up"}),
        ("lift its front legs off the ground", {"front_feet_up"}),
        ("lean forward 30 degrees", {"lean_forward"}),
        ("lean to the right", {"lean_right"}),
    ],
)
def test_poses_by_body_part(prompt, poses):
    assert set(read(prompt).steps[0].poses) == poses


def test_a_body_part_in_a_pose_no_measure_reads_is_listed_not_refused():
    parsed = read("stand with its arms crossed and its legs bent oddly")
    assert parsed.steps[0].core == "stand"
    assert "arms crossed (no measure of the arms reads this)" in parsed.unmeasured
    parsed = read("jog forward with relaxed shoulders")
    assert parsed.steps[0].core == "locomotion"
    assert any("shoulders" in u for u in parsed.unmeasured), parsed.unmeasured


def test_styles_and_unknown_words_are_listed_not_refused():
    parsed = read("walk forward gracefully like a cat with a relaxed stride, for fun")
    assert parsed.steps[0].core == "locomotion"
    assert set(parsed.unmeasured) == {
        "gracefully",
        "like a cat",
        "with a relaxed stride",
        "for fun",
    }
    # A word no table knows never refuses an intent whose behaviour was found: it is listed.
    parsed = read("run to the red ball")
    assert parsed.steps[0].core == "locomotion"
    assert {"'red' (not read)", "'ball' (not read)"} <= set(parsed.unmeasured)
    with pytest.raises(NotExpressible, match="names no behaviour"):
        read("make a sandwich")


@pytest.mark.parametrize(
    ("prompt", "core", "unread"),
    [
        ("walk forward past the glimmerstone", "locomotion", ["glimmerstone"]),
        ("jump twice, then zorble", "jump", ["zorble"]),
        ("spin around the quuxel twice", "spin", ["quuxel"]),
        ("stand still and frobnicate", "stand", ["frobnicate"]),
    ],
)
def test_made_up_words_never_refuse_a_found_behaviour(prompt: str, core: str, unread: list[str]):
    """The rule itself, with words no lexicon has: the behaviour is read, each made-up word is
    listed as not read, and nothing is refused."""
    parsed = read(prompt)
    assert parsed.steps[0].core == core
    for word in unread:
        assert f"'{word}' (not read)" in parsed.unmeasured


def test_made_up_words_alone_are_refused_naming_them():
    with pytest.raises(NotExpressible) as info:
        read("zorble the quuxel")
    message = str(info.value)
    assert "names no behaviour" in message and "it does not know 'zorble quuxel'" in message
    assert "\n" not in message
    # A made-up word in a verb's place is not turned into a walk by the direction after it
    # ("roll over onto its back" once read as walking backward).
    with pytest.raises(NotExpressible, match="it does not know 'blorft'"):
        read("blorft backward")
    assert read("forward at 2 m/s, please").steps[0].core == "locomotion"


def test_flips_read_their_direction_and_count():
    assert [(s.core, s.direction) for s in read("do a backflip").steps] == [("flip", 1.0)]
    assert [(s.core, s.direction) for s in read("do a front flip").steps] == [("flip", -1.0)]
    assert read("flip backwards 720 degrees").steps[0].count == 2


@pytest.mark.parametrize(
    ("env_id", "prompt", "metric", "target"),
    [
        ("HalfCheetah-v5", "run forward at 50 cm per second", "mean_x_velocity", 0.5),
        ("Walker2d-v5", "walk forward at 80 centimetres per second", "mean_x_velocity", 0.8),
        ("Hopper-v5", "hop forward at 3 mph", "mean_x_velocity", 1.3411),
    ],
)
def test_speeds_in_words_are_speeds(env_id: str, prompt: str, metric: str, target: float):
    criteria = match_intent(prompt, env_id).criteria
    speed = next(c for c in criteria if c.metric == metric)
    assert speed.target == pytest.approx(target, abs=1e-3)


@pytest.mark.parametrize(
    ("env_id", "prompt", "core", "said"),
    [
        ("HalfCheetah-v5", "run forward and do not flip", "locomotion", "not flip"),
        ("Ant-v5", "walk forward, no spinning", "locomotion", "no spinning"),
        ("Humanoid-v5", "walk forward and never jump", "locomotion", "never jump"),
    ],
)
def test_a_behaviour_said_not_to_be_done_is_never_read_as_one_to_do(
    env_id: str, prompt: str, core: str, said: str
):
    parsed = read(prompt)
    assert [s.core for s in parsed.steps] == [core]
    assert said in parsed.unmeasured  # listed as not measured, never dropped
    assert said in match_intent(prompt, env_id).unmeasured


def test_a_fall_said_with_a_contraction_is_read_as_staying_up():
    criteria = match_intent("walk forward, it shouldn't fall", "Humanoid-v5").criteria
    assert "alive_fraction" in {c.metric for c in criteria}


def test_a_prompt_that_only_says_what_not_to_do_is_refused_saying_so():
    with pytest.raises(NotExpressible) as info:
        read("do not flip")
    assert "it only says what not to do ('not flip')" in str(info.value)


def test_degree_words_are_read_with_the_word_they_grade():
    assert read("run forward extremely fast").unmeasured == ()
    assert read("walk forward fairly quickly").steps[0].speed == "max"
    assert read("lean forward slightly while standing").steps[0].angle == pytest.approx(0.2)
    assert read("lean back a lot").steps[0].angle == pytest.approx(0.6)
    assert read("lean forward 30 degrees").steps[0].angle == pytest.approx(0.5236, abs=1e-4)


def test_a_part_held_in_a_way_no_pose_measures_is_listed_not_misread():
    # Arms held out in front are not arms out to the sides; straight legs are not a straight
    # line of travel.
    parsed = read("walk with its arms extended forward")
    assert parsed.steps[0].poses == ()
    assert "arms extended forward (no measure of the arms reads this)" in parsed.unmeasured
    parsed = read("walk forward with straight legs")
    assert "straight" not in parsed.steps[0].qualifiers
    assert "straight legs (no measure of the legs reads this)" in parsed.unmeasured
    parsed = read("stand with its knees slightly bent")
    assert parsed.unmeasured == ("knees slightly bent (no measure of the knees reads this)",)
