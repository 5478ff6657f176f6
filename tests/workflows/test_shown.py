"""Generated text is shown literally: escapes, direction overrides and invisibles made visible."""

from __future__ import annotations

import pytest

from workflows.contracts.shown import shown


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("clear\x1b[2J", "clear\\x1b[2J"),  # a terminal escape
        ("title\x1b]0;pwned\x07", "title\\x1b]0;pwned\\x07"),
        ("PASSED\rFAILED", "PASSED\\x0dFAILED"),  # a carriage return forging a line
        ("score\nsandbox layers: none", "score\\x0asandbox layers: none"),
        ("\u202eDEVORPPA", "\\u202eDEVORPPA"),  # shown reversed, as APPROVED, if raw
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("line\u2028sep", "line\\u2028sep"),
    ],
)
def test_hidden_characters_are_written_as_escapes(raw: str, want: str):
    assert shown(raw) == want


def test_ordinary_text_passes_unchanged_and_long_text_is_cut():
    for text in ("forward_speed", "vitesse en m/s", "前进速度", "[/] <a href=x>", "café\u00a0bar"):
        assert shown(text) == text
    assert shown("x" * 50, limit=10) == "xxxxxxx..." and shown(3.5) == "3.5"


# Nine names that print as "forward" unless their invisible parts are shown (issue 42): a
# variation selector, the combining grapheme joiner, a Hangul filler, the halfwidth filler, the
# braille blank, a Mongolian selector, a tag character, a stacked mark, a zero-width joiner.
LOOKALIKES = [
    "forward\ufe0f",
    "forw\u034fard",
    "\u3164forward",
    "forward\uffa0",
    "forward\u2800",
    "forward\u180b",
    "forward\U000e0041",
    "forwa\u0336rd",
    "for\u200dward",
]


def test_names_that_look_the_same_are_shown_apart():
    seen = {shown(name) for name in LOOKALIKES}
    assert len(seen) == len(LOOKALIKES)
    assert all(s != "forward" and "\\" in s for s in seen)


def test_accented_and_other_scripts_stay_readable():
    assert shown("cafe\u0301") == "café"  # a letter and its accent, composed
    for text in ("हिन्दी", "مَرْحَبًا", "ภาษาไทย", "Ελληνικά", "Привет"):
        assert shown(text) == text
    # Marks stacked on a Latin letter, or on nothing, are shown.
    assert shown("x\u0308\u0308\u0308") == "\u1e8d\\u0308\\u0308"
    assert shown("\u0301alone") == "\\u0301alone"
