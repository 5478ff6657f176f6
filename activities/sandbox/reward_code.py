"""The contract reward code is written in, and the checks on what it declares:
`RewardFunction`, `RewardLoadError`, the limits every answer is held to (`MAX_TERMS`, `LARGE`,
...), the static check (`parse_check`), and the declared term names and SHAPING. Loading the code
and guarding its calls is `loaded_reward.py` (`load_reward`, `LoadedReward`).

The contract (DESIGN.md): a class deriving `RewardFunction` with
`compute(obs, action, next_obs, info) -> (float, dict[str, float])` and `latex` / `terms`
properties, or a plain `reward_fn(obs, action, next_obs, info)` returning the same pair.
`RewardFunction` is predefined in the namespace the code runs in, so reward files need no import.
No gymnasium import: the sandbox process stays small and quick to start.
"""

from __future__ import annotations

import abc
import json
import math
import re
from typing import Any

from activities.sandbox.static_check import SandboxViolation, check_source


class RewardLoadError(ValueError):
    """Reward code that cannot be used; the message is one line a person or an LLM can act on."""


class RewardFunction(abc.ABC):
    """Base class for reward code. Subclasses implement `compute` and describe themselves; one
    without `compute` cannot be instantiated, so loading it fails with that reason."""

    @abc.abstractmethod
    def compute(self, obs, action, next_obs, info) -> tuple[float, dict[str, float]]:
        """The reward for one transition and its named terms (the total is their sum)."""

    @property
    def latex(self) -> str:
        """The reward as a LaTeX formula, for people (empty when not given)."""
        return ""

    @property
    def terms(self) -> list[str]:
        """The names of the terms `compute` returns (empty when not given)."""
        return []


# Terms a reward may name, in one call and over a whole run (the trusted side counts the
# distinct names it is sent): every summary, history entry and prompt section is bounded by it.
MAX_TERMS = 64
MAX_TERM_NAME = 64
# Non-finite rewards tolerated in training (zeroed and counted) before the run is failed.
MAX_NONFINITE_FRACTION = 0.01
INF = math.inf
LARGE = 1e6  # |reward| above this is clipped and counted: it would swamp PPO's value targets
# A batched call may take as long as this many single calls (a batch is at most a few thousand
# rows, which numpy scores in about the time of a few dozen rows one by one).
BATCH_BUDGET_CALLS = 50
# Rows of a reward's first batch that are also scored one by one to confirm the batched call.
CONFIRM_ROWS = 16


# `from policyforge import RewardFunction`: the import a reward file may open with so that
# editors and type checkers know the base class (the package exports it). The sandbox already
# predefines the name, so the line is blanked before the static check (the line count kept).
OWN_IMPORT = re.compile(r"^from policyforge import RewardFunction[ \t]*(#[^\n]*)?$", re.MULTILINE)


def without_own_import(source: str) -> str:
    """The source with the base class's import line blanked (nothing else changes)."""
    return OWN_IMPORT.sub("", source)


def parse_check(source: str, filename: str = "<reward>") -> None:
    """Raise RewardLoadError naming the line when the code does not parse or is not allowed."""
    try:
        check_source(without_own_import(source), filename)
    except SandboxViolation as exc:
        raise RewardLoadError(str(exc)) from None


def _term_names(raw: Any, filename: str) -> list[str]:
    """The declared term names as plain strings (cut to MAX_TERM_NAME): a list of names, or a
    dict of name to description (Prompt2Policy's form; the names are its keys).
    RewardLoadError for anything else, or more than MAX_TERMS names."""
    if type(raw) is dict and all(type(k) is str and type(v) is str for k, v in raw.items()):
        raw = list(raw)
    if not isinstance(raw, list | tuple) or not all(type(n) is str for n in raw):
        raise RewardLoadError(
            f"{filename}: `terms` must be a list of term names, or a dict of term name to "
            "description (strings)"
        )
    if len(raw) > MAX_TERMS:
        raise RewardLoadError(f"{filename}: `terms` lists {len(raw)} names; at most {MAX_TERMS}")
    return [n[:MAX_TERM_NAME] for n in raw]


def _shaping_data(raw: Any, filename: str) -> Any:
    """SHAPING as plain JSON data (the trusted side validates its meaning); RewardLoadError
    when it is anything else."""
    if raw is None:
        return None
    try:
        return json.loads(json.dumps(raw, allow_nan=False))
    except (TypeError, ValueError):
        raise RewardLoadError(
            f"{filename}: SHAPING must be plain data (a dict of numbers and lists of numbers)"
        ) from None
