"""The session's custom search attributes, kept current for the Temporal Web UI's list view.

Defined here once. Registered by the embedded dev server at start (`--search-attribute`, from
`SEARCH_ATTRIBUTES`), by the compose deployment's temporal-init job (deploy/temporal/init.sh,
which a test keeps in step with `SEARCH_ATTRIBUTES`), and by the test fixtures (`KEYS`). A
namespace without them rejects the upserts: start sessions there with `search_attributes: false`.
"""

from __future__ import annotations

from typing import Any

from temporalio.common import SearchAttributeIndexedValueType, SearchAttributeKey

STAGE = SearchAttributeKey.for_keyword("PolicyforgeStage")
ENV = SearchAttributeKey.for_keyword("PolicyforgeEnv")
ITERATION = SearchAttributeKey.for_int("PolicyforgeIteration")
BEST_SCORE = SearchAttributeKey.for_float("PolicyforgeBestScore")
PASSED = SearchAttributeKey.for_bool("PolicyforgePassed")
# The author's model label ("offline (no LLM)", "claude-..."); sessions of 0.1.0 lack it.
MODEL = SearchAttributeKey.for_keyword("PolicyforgeModel")
KEYS: tuple[SearchAttributeKey[Any], ...] = (STAGE, ENV, ITERATION, BEST_SCORE, PASSED, MODEL)
# Sessions upsert MODEL behind this patch, so histories recorded before it replay.
MODEL_PATCH = "model-search-attribute"

# Type names as the `temporal` CLI spells them (`--search-attribute Name=Type`, `--type`).
_CLI_TYPES = {
    SearchAttributeIndexedValueType.TEXT: "Text",
    SearchAttributeIndexedValueType.KEYWORD: "Keyword",
    SearchAttributeIndexedValueType.INT: "Int",
    SearchAttributeIndexedValueType.DOUBLE: "Double",
    SearchAttributeIndexedValueType.BOOL: "Bool",
    SearchAttributeIndexedValueType.DATETIME: "Datetime",
    SearchAttributeIndexedValueType.KEYWORD_LIST: "KeywordList",
}
# Name -> CLI type of each attribute, e.g. {"PolicyforgeStage": "Keyword", ...}.
SEARCH_ATTRIBUTES: dict[str, str] = {key.name: _CLI_TYPES[key.indexed_value_type] for key in KEYS}


def values(
    stage: str,
    env_id: str,
    iteration: int,
    best: float | None,
    passed: bool,
    model: str | None = None,
) -> tuple:
    """The attributes' values in `KEYS` order (no best score yet: -1; no model: left out, as
    before `MODEL_PATCH`), compared before upserts."""
    head = (stage, env_id, iteration, -1.0 if best is None else round(best, 4), passed)
    return head if model is None else (*head, model)


def updates(current: tuple) -> list[Any]:
    """The upsert of the attributes to the given values (the first len(current) of `KEYS`)."""
    return [key.value_set(value) for key, value in zip(KEYS, current, strict=False)]
