"""Lessons across real sessions: a finished session writes its lesson page, and the next session
on the same intent starts from it (the passing weights and budget) and needs no more iterations.
Real worker pools, real SeaweedFS, real PPO on real MuJoCo."""

from __future__ import annotations

import asyncio

import pytest

from activities import lessons
from activities.artifacts import ArtifactStore
from tests.builders import all_pools, start_session
from workflows.contracts.keys import lesson_key

# Slow tier: two whole sessions one after the other.
pytestmark = pytest.mark.slow


async def test_a_second_session_starts_from_the_first_sessions_lesson(
    temporal_env, s3, queue_prefix
):
    # A behaviour a few thousand steps reach for real (the verdict is every criterion met): a
    # cheetah that comes to rest upright.
    prompt, env_id = "stay still", "HalfCheetah-v5"
    store = ArtifactStore()
    store.ensure_bucket()
    key = lesson_key(env_id, lessons.behaviour_key(prompt))
    if store.exists(key):  # another test's page: start from none
        store.delete(key)
    common = dict(
        prompt=prompt,
        env_id=env_id,
        max_iterations=2,
        eval_max_steps=40,
        # Every step of the budget: the lesson carries the budget the runs trained.
        min_training_share=1.0,
    )
    async with all_pools(temporal_env.client, queue_prefix):
        first = await start_session(
            temporal_env.client, queue_prefix, total_timesteps=4096, **common
        )
        one = await asyncio.wait_for(first.result(), timeout=600)
        page = store.get_text(key)
        second = await start_session(
            temporal_env.client, queue_prefix, total_timesteps=2048, **common
        )
        two = await asyncio.wait_for(second.result(), timeout=600)

    assert one.passed, one
    assert f"Session `{one.session_id}` (offline) passed at iteration 1" in page
    assert "4,096 steps per run" in page

    # The second session's first reward is the lesson's (its weights), trained with the
    # lesson's budget although the session asked for half of it, and it needs no more
    # iterations.
    first_code = store.get_text(two.iterations[0].reward_key)
    assert f"Started from the lesson of session {one.session_id}" in first_code
    assert two.iterations[0].timesteps == 4096
    assert two.passed and len(two.iterations) <= len(one.iterations)
    both = lessons.parse(env_id, lessons.behaviour_key(prompt), store.get_text(key)).entries
    assert [e.session_id for e in both] == [one.session_id, two.session_id]
    assert both[1].params == both[0].params
