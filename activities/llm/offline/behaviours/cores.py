"""The core behaviours a step can compose, by name: gaits (gaits.py), postures
(postures.py) and motions in place (motions.py). `build_single` composes one step; phased.py
sequences steps, counted jumps and flips."""

from __future__ import annotations

from collections.abc import Callable

from activities.llm.offline.behaviours.compose import Builder
from activities.llm.offline.behaviours.gaits import locomotion
from activities.llm.offline.behaviours.motions import (
    balance,
    jump,
    jump_target,
    reach,
    rear_up,
    spin,
    turn,
)
from activities.llm.offline.behaviours.postures import ANGLE_LIMITED, hold, lie, pose, stand, stop
from activities.llm.offline.words.refusals import NotExpressible

__all__ = ["ANGLE_LIMITED", "CORES", "build_single", "jump_target"]


CORES: dict[str, Callable[[Builder], None]] = {
    "locomotion": locomotion,
    "stand": stand,
    "lie": lie,
    "sit": hold,
    "squat": hold,
    "spin": spin,
    "turn": turn,
    "jump": jump,
    "balance": balance,
    "reach": reach,
    "rear_up": rear_up,
    "pose": pose,
    "stop": stop,
}


def build_single(b: Builder) -> None:
    """Compose one step's core (flips and counted jumps are phased: phased.py)."""
    build = CORES.get(b.r.core)
    if build is None:
        raise NotExpressible(f"the offline author does not compose {b.r.core} on its own")
    build(b)
