"""Text that came from generated code or a model, made safe to show a person.

Term names, criteria, diagnoses and formulas are data: shown literally, never interpreted. A
terminal would run an escape sequence (clear the screen, set the title, forge a line with a
carriage return), a bidirectional override would display "DEVORPPA" as "APPROVED", and a
zero-width character hides text. `shown` writes every such character as a visible escape
(\\x1b, \\u202e, \\n) so what a person reads is what the text holds, and so are marks and
blanks that show nothing (variation selectors, Hangul fillers, the braille blank), which would
make two names that look alike; printable text, spaces, accented and non-Latin letters (with
one mark of their own script each) pass unchanged. Markup (rich's [tags], HTML) is the
caller's to escape for its own renderer, after this.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode categories never shown raw: controls, format characters (direction overrides,
# zero-width joiners, the BOM), line and paragraph separators, surrogates, private use and
# unassigned code points, and combining marks that carry no base of their own (a mark stacked
# on "forward" makes a second "forward" that looks the same).
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn", "Mn", "Me"}
# Printable code points that show nothing or a blank: variation selectors, the combining
# grapheme joiner, Hangul fillers, the braille blank, Mongolian selectors, tags and the rest of
# Unicode's default-ignorable set.
_BLANK = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0, 0x1D159]
    + list(range(0x180B, 0x1810))
    + list(range(0xFE00, 0xFE10))
    + list(range(0x1D173, 0x1D17B))
    + list(range(0xE0000, 0xE1000))
)


def _hidden(ch: str) -> bool:
    return ord(ch) in _BLANK or unicodedata.category(ch) in _HIDDEN


def _escaped(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: object, limit: int | None = None) -> str:
    """`text` with every control, format or invisible character written as an escape; cut to
    `limit` characters (with "...") when given."""
    # Composed first, so that an accented letter written as a letter and a mark ("e" + U+0301)
    # stays one letter, not a letter and an escape.
    raw = unicodedata.normalize("NFC", str(text))
    if limit is not None and len(raw) > limit:
        raw = raw[: max(0, limit - 3)] + "..."
    if raw.isascii():
        return raw if raw.isprintable() else "".join(map(_ascii, raw))
    out, base = [], ""
    for ch in raw:
        mark = unicodedata.category(ch) in ("Mn", "Me")
        # A script written with marks (Devanagari's virama, Arabic's vowels) keeps one mark on
        # a letter of its own; a mark on a Latin letter (left over after composing), a second
        # mark or a mark on nothing is shown as an escape.
        native = mark and _marked_script(base)
        out.append(ch if native and ord(ch) not in _BLANK else _escaped(ch) if _hidden(ch) else ch)
        base = "" if mark else ch
    return "".join(out)


def _marked_script(base: str) -> bool:
    """Whether `base` is a letter of a script written with combining marks: not Latin, Greek
    or Cyrillic, whose accented letters compose into one code point."""
    if not base or unicodedata.category(base)[0] != "L":
        return False
    return not unicodedata.name(base, "").startswith(("LATIN", "GREEK", "CYRILLIC"))


def _ascii(ch: str) -> str:
    return ch if ch.isprintable() else _escaped(ch)


# What makes markdown of inline text: emphasis, code, links and images, raw HTML, table cells.
_MARKDOWN = set("\\`*_[]<>!|~@")
_AUTOLINK = re.compile(r"(?i)(?:\b(?:https?|ftp|mailto):|\bwww\.)")


def shown_markdown(text: object, limit: int | None = None) -> str:
    """`shown(text, limit)` for a markdown page (the Temporal Web UI's details): its markup
    characters backslash-escaped, so a diagnosis cannot make a link, an image that fetches a
    URL, or a table cell."""
    out = "".join(f"\\{ch}" if ch in _MARKDOWN else ch for ch in shown(text, limit))
    # A bare address is a link too (GFM autolinks "http://..." and "www..."): an escaped
    # colon or dot shows the same and links nowhere.
    return _AUTOLINK.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], out)
