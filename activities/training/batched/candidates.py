"""The candidates a batch trains together: each one's reward and PPO preset (`Candidate`),
what its episodes earned (`CandidateStats`), and the settings they must share
(`batch_shape`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from activities.training.presets import SHAPE_FIELDS, PPOPreset
from activities.training.reward_runtime import ColumnRewards


def batch_shape(presets: Sequence[PPOPreset]) -> dict[str, Any]:
    """The settings the candidates share; ValueError naming the first that differs."""
    first = presets[0]
    for p in presets[1:]:
        for name in SHAPE_FIELDS:
            if getattr(p, name) != getattr(first, name):
                raise ValueError(
                    f"candidates in one batch must share {name} "
                    f"({getattr(first, name)!r} != {getattr(p, name)!r}): train them in "
                    "separate batches"
                )
    return {name: getattr(first, name) for name in SHAPE_FIELDS}


@dataclass
class Candidate:
    """One candidate: its reward (scored in its own sandbox) and its PPO settings."""

    name: str
    rewards: ColumnRewards
    preset: PPOPreset


@dataclass
class CandidateStats:
    """What a candidate's episodes earned since training started (finished episodes only)."""

    returns: list[float] = field(default_factory=list)  # under the candidate's reward
    env_returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    term_sums: dict[str, float] = field(default_factory=dict)
    transitions: int = 0
    # The last rollout's per-step term means and the last update's losses (SB3's train/ keys).
    rollout_terms: dict[str, float] = field(default_factory=dict)
    train: dict[str, float] = field(default_factory=dict)
