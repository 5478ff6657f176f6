"""The fake provider server the LLM tests point the real SDK clients at."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.llm_server import FakeLLMServer


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """One server per test module; each module's `fake` fixture empties it and points the SDKs
    at it through the environment."""
    with FakeLLMServer() as s:
        yield s
