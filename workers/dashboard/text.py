"""Generated text as the dashboard shows it: data, never instructions to the renderer.

HTML is escaped by the templates (Jinja2's autoescape) and Plotly's mini-HTML by
`static/dashboard.js`; what neither escapes, a terminal escape sequence, a direction override
that makes "DEVORPPA" display as "APPROVED", a zero-width character, is written here as a
visible escape (\\x1b, \\u202e) by `shown` (workflows/contracts/shown.py).
"""

from __future__ import annotations

from markupsafe import Markup

from workflows.contracts.shown import shown

ERROR_CHARS = 300  # an error message's length on a page or in an answer


def visible(text: str) -> str:
    """`text` with hidden characters escaped, its line breaks and tabs kept: reward code and
    diffs are shown as the lines they are."""
    if text.isprintable():
        return text
    return "\n".join("\t".join(map(shown, line.split("\t"))) for line in text.split("\n"))


def finalize(value: object) -> object:
    """Every `{{ value }}` of a template: text made visible before autoescape; markup the
    dashboard built itself (MathML, rendered parts) and numbers as they are."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def one_line(message: object) -> str:
    """An error as one line a person can read (line breaks and controls escaped, cut short)."""
    return shown(message, ERROR_CHARS)
