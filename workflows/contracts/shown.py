"""Text that came from generated code or a model, made safe to show a person.

Term names, criteria, diagnoses and formulas are data: shown literally, never interpreted. A
terminal would run an escape sequence (clear the screen, set the title, forge a line with a
carriage return), a bidirectional override would display "DEVORPPA" as "APPROVED", and a
zero-width character hides text. `shown` writes every such character as a visible escape
(\\x1b, \\u202e, \\n) so what a person reads is what the text holds; printable text, spaces and
non-Latin letters pass unchanged. Markup (rich's [tags], HTML) is the caller's to escape for
its own renderer, after this.
"""

from __future__ import annotations

import unicodedata

# Unicode categories never shown raw: controls, format characters (direction overrides,
# zero-width joiners, the BOM), line and paragraph separators, surrogates, private use and
# unassigned code points.
_HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def _escaped(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: object, limit: int | None = None) -> str:
    """`text` with every control, format or invisible character written as an escape; cut to
    `limit` characters (with "...") when given."""
    raw = str(text)
    if limit is not None and len(raw) > limit:
        raw = raw[: max(0, limit - 3)] + "..."
    if raw.isprintable():
        return raw
    return "".join(_escaped(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in raw)


# What makes markdown of inline text: emphasis, code, links and images, raw HTML, table cells.
_MARKDOWN = set("\\`*_[]<>!|~")


def shown_markdown(text: object, limit: int | None = None) -> str:
    """`shown(text, limit)` for a markdown page (the Temporal Web UI's details): its markup
    characters backslash-escaped, so a diagnosis cannot make a link, an image that fetches a
    URL, or a table cell."""
    return "".join(f"\\{ch}" if ch in _MARKDOWN else ch for ch in shown(text, limit))
