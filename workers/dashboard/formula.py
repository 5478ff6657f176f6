"""A reward's formula (its `latex`) as MathML, which browsers draw natively: no script, no
fonts to fetch. The LaTeX comes from generated code, so the converter's output is re-built
from a whitelist of MathML elements and attributes (text escaped) before it reaches a page;
anything else, or LaTeX the converter cannot read, is shown as escaped source instead. Text in
either has its hidden characters (a direction override, an escape sequence) written as
visible escapes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from markupsafe import Markup, escape

from workflows.contracts.shown import shown

_NS = "{http://www.w3.org/1998/Math/MathML}"
_TAGS = {
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup",
    "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd",
    "mstyle", "mpadded", "mphantom", "menclose", "merror", "semantics", "annotation",
}  # fmt: skip
_ATTRS = {
    "display", "mathvariant", "width", "stretchy", "fence", "separator", "lspace", "rspace",
    "accent", "accentunder", "movablelimits", "columnalign", "rowspacing", "columnspacing",
    "minsize", "maxsize", "form", "linethickness", "displaystyle", "scriptlevel", "notation",
    "symmetric", "largeop", "encoding",
}  # fmt: skip


def _clean(element: ET.Element) -> str | None:
    """The element as markup if every part of it is whitelisted MathML, else None."""
    tag = element.tag.removeprefix(_NS)
    if tag not in _TAGS or any(name not in _ATTRS for name in element.attrib):
        return None
    attrs = "".join(f' {k}="{escape(shown(v))}"' for k, v in element.attrib.items())
    if tag == "math":
        attrs = ' xmlns="http://www.w3.org/1998/Math/MathML"' + attrs
    inner = [str(escape(shown(element.text or "")))]
    for child in element:
        part = _clean(child)
        if part is None:
            return None
        inner.append(part + str(escape(shown(child.tail or ""))))
    return f"<{tag}{attrs}>{''.join(inner)}</{tag}>"


def mathml(latex: str | None) -> Markup:
    """The formula as a display-style <math> element, or its source in <code>."""
    if not latex or not latex.strip():
        return Markup("")
    from latex2mathml.converter import convert

    source = latex.strip().strip("$").strip()
    try:
        cleaned = _clean(ET.fromstring(convert(source, display="block")))
    except Exception:  # noqa: BLE001 - the converter and the parser raise many kinds
        cleaned = None
    if cleaned is None:
        return Markup(f'<code class="latex">{escape(shown(source))}</code>')
    return Markup(cleaned)  # noqa: S704 - rebuilt from the whitelist above, text escaped
