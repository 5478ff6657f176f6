"""The nearest known behaviour for a word the tables lack, by static embeddings from a wheel.

WordLlama (`wordllama` on PyPI) ships its weights (l2_supercat, 256 dimensions, 16 MB) and its
tokenizer inside the package, so the reader can compare a word with the verbs it knows without
a network or a download: `nearest("waddle", {"paddle": "locomotion", ...})` is a `Match` when the
best cosine similarity reaches `THRESHOLD`, else None. If the package is missing or cannot load
from its own folder, `unavailable()` says why and `nearest` is None: the reader reads by its
tables alone.

The embeddings are a language model's subword-token embeddings averaged over a word's pieces:
for single words they track spelling (pieces shared with an anchor) far more than meaning, which
is why `THRESHOLD` is high (see its comment).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import structlog

# Measured on 2026-11-29 (wordllama 0.4.0.post1, l2_supercat 256) with CORE_VERBS' 69 lemmas as
# anchors, over 56 behaviour verbs the tables lack (creep, sneak, tiptoe, waddle, kneel, recline,
# perch, tumble, pause, grab, ...) and 68 words that are no behaviour (gracefully, purple, ground,
# robot, legs, the, keep, zorp, grimble, ...):
#   threshold   0.25 0.30 0.35 0.40 0.45 0.50 0.55 0.60 0.65 0.70
#   read right    18   13   10    9    6    6    4    3    3    3
#   read wrong     9    6    5    2    2    1    1    1    0    0
#   false reads   14    6    3    3    3    2    1    1    0    0
# 0.65 is the lowest with no wrong and no false read; what it reads are near-rhymes of an
# anchor (waddle/paddle 0.83, meander/wander 0.85, pounce/bounce 0.75), just above the made-up
# "grimble" (amble, 0.63) and "handspring" (spring: jump, 0.61).
THRESHOLD = 0.65


@dataclass(frozen=True)
class Match:
    """The behaviour a word was read as: its label, the anchor it was nearest, and how near."""

    label: str
    anchor: str
    similarity: float


@lru_cache(maxsize=1)
def _load() -> tuple[Any | None, str | None]:
    """(the model, None) once per process, or (None, why it is not there), said once."""
    root = logging.getLogger()
    # wordllama calls logging.basicConfig(level=INFO) on import; a handler already on the root
    # logger makes that a no-op, so importing it never changes how the process logs.
    guard = logging.NullHandler() if not root.handlers else None
    if guard:
        root.addHandler(guard)
    try:
        import wordllama
    except ImportError as e:
        return _unavailable(f"wordllama is not installed ({e})")
    finally:
        if guard:
            root.removeHandler(guard)
    try:
        # The weights lie in <package>/weights and the tokenizer in <package>/tokenizers, where
        # `load` looks under cache_dir; its default cache_dir (~/.cache/wordllama) lacks them and
        # would download. disable_download: a missing file raises instead of touching the network.
        model = wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )
    except Exception as e:  # any failure to load leaves the reader to its tables
        return _unavailable(f"wordllama could not load offline ({type(e).__name__}: {e})")
    return model, None


def _unavailable(why: str) -> tuple[None, str]:
    structlog.get_logger().warning("word meanings unavailable: reading by tables alone", reason=why)
    return None, why


def unavailable() -> str | None:
    """Why the embedding model cannot be used in this process, or None when it can."""
    return _load()[1]


def _unit(vectors: np.ndarray) -> np.ndarray:
    # A phrase of no known token pools to zeros: its similarity is 0, never a NaN.
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


@lru_cache(maxsize=8)
def _anchor_vectors(model: Any, anchors: tuple[str, ...]) -> np.ndarray:
    # The same anchor set is passed on every call: embed it once.
    return _unit(np.asarray(model.embed(list(anchors)), dtype=np.float32))


def nearest(phrase: str, choices: Mapping[str, str]) -> Match | None:
    """The label of the anchor in `choices` nearest `phrase`, when at least `THRESHOLD` near."""
    text = " ".join(phrase.lower().split())
    model = _load()[0]
    if not text or not choices or model is None:
        return None
    anchors = tuple(choices)
    vector = _unit(np.asarray(model.embed([text]), dtype=np.float32))[0]
    similarities = _anchor_vectors(model, anchors) @ vector
    best = int(np.argmax(similarities))
    similarity = float(similarities[best])
    if similarity < THRESHOLD:
        return None
    return Match(choices[anchors[best]], anchors[best], similarity)
