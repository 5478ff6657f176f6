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
