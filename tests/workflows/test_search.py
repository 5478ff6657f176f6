"""The custom search attributes are defined once (workflows/search.py): the compose deployment's
temporal-init script must create exactly those, with the same types."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from temporalio.common import SearchAttributeIndexedValueType

from workflows import search

INIT_SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "temporal" / "init.sh"


def _created_by_init_script() -> dict[str, str]:
    """{name: type} of the `for attr in Name=Type ...; do ... search-attribute create` loop."""
    text = INIT_SCRIPT.read_text().replace("\\\n", " ")  # join continued lines
    loops = re.findall(r"^\s*for (\w+) in ([^;\n]*); do\n(.*?)^\s*done", text, re.M | re.S)
    created: dict[str, str] = {}
    for var, words, body in loops:
        if "search-attribute create" not in body:
            continue
        # The body must take the name and the type from the loop variable, as the CLI wants them.
        assert f'--name "${{{var}%%=*}}"' in body and f'--type "${{{var}#*=}}"' in body, body
        for word in shlex.split(words, comments=True):
            name, _, kind = word.partition("=")
            assert name not in created, f"{name} created twice"
            created[name] = kind
    return created


def test_init_script_creates_exactly_the_search_attributes():
    assert _created_by_init_script() == search.SEARCH_ATTRIBUTES


def test_search_attributes_come_from_the_typed_keys():
    assert list(search.SEARCH_ATTRIBUTES) == [key.name for key in search.KEYS]
    # Every indexed type has a CLI spelling.
    assert set(search._CLI_TYPES) == set(SearchAttributeIndexedValueType)
