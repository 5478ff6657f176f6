"""Each activity reference is implemented once, on its pool, with the declared types; and the
type checker rejects a call or an implementation that does not match its reference."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest
from temporalio import activity

from workers.pools.pools import pool_activities
from workflows.contracts import activities as refs

ROOT = Path(__file__).resolve().parents[2]
POOLS = {pool: pool_activities(pool) for pool in ("llm", "train", "judge")}


def test_every_reference_is_implemented_once_on_its_pool_with_its_types() -> None:
    by_name = {ref.name: ref for ref in refs.ALL}
    assert len(by_name) == len(refs.ALL)
    seen: list[str] = []
    for pool, functions in POOLS.items():
        for fn in functions:
            name = activity._Definition.must_from_callable(fn).name
            ref = by_name[name]
            assert ref.pool == pool, f"{name} is registered on {pool}, declared on {ref.pool}"
            hints = typing.get_type_hints(fn)
            [request] = [v for k, v in hints.items() if k != "return"]
            assert (request, hints["return"]) == (ref.request, ref.result), name
            seen.append(name)
    assert sorted(seen) == sorted(by_name)


BAD = """
from workflows.contracts import activities as act
from workflows.contracts.llm import FixResult, ReviewRequest, ReviewResult
from workflows.steps import Steps


@act.implements(act.REVIEW_REWARD)
def review_returns_the_wrong_result(req: ReviewRequest) -> FixResult:
    raise NotImplementedError


async def sends_a_review_to_the_fixer(steps: Steps, req: ReviewRequest) -> None:
    await steps.llm(act.FIX_CODE, req)


async def expects_the_wrong_result(steps: Steps, req: ReviewRequest) -> FixResult:
    return await steps.llm(act.REVIEW_REWARD, req)


async def is_right(steps: Steps, req: ReviewRequest) -> ReviewResult:
    return await steps.llm(act.REVIEW_REWARD, req)
"""


@pytest.mark.timeout(300)
def test_the_type_checker_rejects_mismatched_calls_and_implementations(tmp_path: Path) -> None:
    (tmp_path / "mismatched.py").write_text(textwrap.dedent(BAD))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--follow-imports=silent", "--cache-dir", str(ROOT / ".mypy_cache"),
         str(tmp_path / "mismatched.py")],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )  # fmt: skip
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    source = textwrap.dedent(BAD).splitlines()
    flagged = [source[n - 1].strip() for n in lines]
    assert flagged == [
        "@act.implements(act.REVIEW_REWARD)",
        "await steps.llm(act.FIX_CODE, req)",
        "return await steps.llm(act.REVIEW_REWARD, req)",
    ], done.stdout
