"""The reader's numbers: number words, units and their dimensions, and the limits said before
a number ("no quicker than", "at least", "between ... and")."""

from __future__ import annotations

import math

from activities.llm.offline.words.lexicon import table, words

NUMBER_WORDS: dict[str, float] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
    "half": 0.5,
}  # fmt: skip
NUMBER_PHRASES: dict[str, str] = {
    "a couple of": "2", "a couple": "2", "a few": "3", "several": "3", "a pair of": "2",
    "a single": "1", "a full": "1", "one full": "1", "half a": "0.5", "a half": "0.5",
}  # fmt: skip
# Counts said as one word: "twice", "a double backflip".
COUNT_WORDS: dict[str, int] = {"once": 1, "twice": 2, "thrice": 3, "double": 2, "triple": 3}

# Unit words -> (dimension, factor to SI). "count" units count the behaviour ("3 times").
UNITS: dict[str, tuple[str, float]] = {
    "mps": ("speed", 1.0),
    "cmps": ("speed", 0.01),
    "mph": ("speed", 0.44704),
    "kmh": ("speed", 1 / 3.6),
    "kph": ("speed", 1 / 3.6),
    "radps": ("rate", 1.0),
    **dict.fromkeys(("m", "meter", "meters", "metre", "metres"), ("length", 1.0)),
    **dict.fromkeys(
        ("cm", "centimeter", "centimeters", "centimetre", "centimetres"), ("length", 0.01)
    ),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("time", 1.0)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", 60.0)),
    **dict.fromkeys(("deg", "degree", "degrees"), ("angle", math.pi / 180.0)),
    **dict.fromkeys(("rad", "radian", "radians"), ("angle", 1.0)),
    **dict.fromkeys(("step", "steps", "timestep", "timesteps"), ("steps", 1.0)),
    **dict.fromkeys(
        (
            "turn",
            "turns",
            "rotation",
            "rotations",
            "revolution",
            "revolutions",
            "circle",
            "circles",
            "lap",
            "laps",
            "spin",
            "spins",
        ),
        ("turns", 1.0),
    ),
    **dict.fromkeys(
        ("time", "times", "repetition", "repetitions", "reps", "rep", "x"), ("count", 1.0)
    ),
    **dict.fromkeys(
        (
            "jump",
            "jumps",
            "hop",
            "hops",
            "leap",
            "leaps",
            "bounce",
            "bounces",
            "flip",
            "flips",
            "backflip",
            "backflips",
            "frontflip",
            "frontflips",
            "somersault",
            "somersaults",
        ),
        ("count", 1.0),
    ),
}
UNIT_PHRASES: dict[str, str] = {
    **table(
        "mps",
        "meters per second | metres per second | meter per second | metre per "
        "second | m per s | m per second | meters a second | metres a second",
    ),
    **table(
        "cmps",
        "cm per second | cm per s | cm a second | centimeters per second | centimetres per "
        "second | centimeter per second | centimetre per second | centimetres a second",
    ),
    **table("kmh", "km per h | km per hour | kilometers per hour | kilometres per hour | km h"),
    **table("mph", "miles per hour | mile per hour | miles an hour"),
    **table("radps", "rad per s | radians per second | rad per second"),
    **table(
        "turns",
        "full turns | full turn | full rotations | full rotation | full circles | "
        "full circle | complete turns | complete turn | complete rotations | complete "
        "rotation",
    ),
}
# Words before a number that bound it.
LIMITS: dict[str, str] = {
    **table(
        "upper",
        "no quicker than | no faster than | not faster than | not quicker than | no more than "
        "| not more than | at most | up to | under | below | less than | slower than | lower "
        "than | capped at | never exceeding | without exceeding | not exceeding | not above | "
        "no higher than | not higher than | never faster than | never more than | a maximum of "
        "| at a maximum of | maximum of | max of | within | in under | in less than | in",
    ),
    **table(
        "lower",
        "at least | no slower than | not slower than | no less than | not less than | more "
        "than | over | above | faster than | quicker than | higher than | a minimum of | at a "
        "minimum of | minimum of | never slower than | never less than | upwards of",
    ),
    **table(
        "exact",
        "at | of | around | about | roughly | approximately | exactly | precisely | near | close "
        "to | at around | at about | at roughly | at exactly | at approximately | at a speed of "
        "| at a pace of | with a speed of | to a height of | for | by | to",
    ),
}
# Words after a length that make it a height ("0.5 m high").
HEIGHT_WORDS = words("high up tall height upward upwards air aloft ground floor vertically")
