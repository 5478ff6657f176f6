"""The composer's entry: a read intent to its composition, one behaviour (cores.py) or a
phased sequence (phased.py); kept apart from compose.py, which both of those build on."""

from __future__ import annotations

from activities.llm.offline.behaviours.compose import Builder, Composition
from activities.llm.offline.behaviours.cores import build_single
from activities.llm.offline.behaviours.phased import build_phased, is_phased
from activities.llm.offline.reading.reader import Parsed


def compose(parsed: Parsed, env_id: str) -> Composition:
    """The composition for a read intent on an env; NotExpressible naming what is missing."""
    if is_phased(parsed, env_id):
        return build_phased(parsed, env_id)
    step = parsed.steps[0]
    b = Builder(env_id, step, parsed.unused)
    build_single(b)
    b.check_used()
    b.finish(step.natural)
    return b.composition(step.core, parsed)
