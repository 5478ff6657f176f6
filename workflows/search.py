"""The session's custom search attributes, kept current for the Temporal Web UI's list view.

Registered by the embedded dev server at start (`--search-attribute`), by the compose
deployment's temporal-init job, and by the test fixtures. A namespace without them rejects the
upserts: start sessions there with `search_attributes: false`.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeKey

STAGE = SearchAttributeKey.for_keyword("PolicyforgeStage")
ENV = SearchAttributeKey.for_keyword("PolicyforgeEnv")
ITERATION = SearchAttributeKey.for_int("PolicyforgeIteration")
BEST_SCORE = SearchAttributeKey.for_float("PolicyforgeBestScore")
PASSED = SearchAttributeKey.for_bool("PolicyforgePassed")
KEYS = (STAGE, ENV, ITERATION, BEST_SCORE, PASSED)


def values(stage: str, env_id: str, iteration: int, best: float | None, passed: bool) -> tuple:
    return (stage, env_id, iteration, -1.0 if best is None else round(best, 4), passed)


def updates(current: tuple) -> list[Any]:
    return [key.value_set(value) for key, value in zip(KEYS, current, strict=True)]
