"""A train worker re-shares its cores as runs start and end, and a running engine takes its
new share between updates (a run started alone no longer keeps both cores' threads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from activities.runner.baseline_reward import RUN_FORWARD
from activities.training.batched.physics import PhysicsStepper
from activities.training.core_share import MARKER, sharing_cores, threads_asked
from activities.training.sim import make_env


def test_every_run_in_progress_gets_the_same_share_as_runs_come_and_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("POLICYFORGE_TRAIN_CORES", "4")
    first = tmp_path / "first"
    with sharing_cores() as alone:
        alone.follow(first)
        assert alone.threads == 4 and threads_asked(first) == 4
        with sharing_cores(children=3) as batch:  # a batch of three groups joins
            assert batch.threads == 1 and alone.threads == 1
            assert threads_asked(first) == 1
        # The batch ended: the first run has the cores again.
        assert alone.threads == 4 and threads_asked(first) == 4
    assert threads_asked(tmp_path / "none") is None
    (first / MARKER).write_text('{"threads": "all"}')
    assert threads_asked(first) is None


def test_the_physics_steps_alike_on_any_number_of_threads():
    envs = [make_env("Hopper-v5", None).unwrapped for _ in range(6)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    twins = [make_env("Hopper-v5", None).unwrapped for _ in range(6)]
    for i, env in enumerate(twins):
        env.reset(seed=i)
    one, many = PhysicsStepper(envs, 1), PhysicsStepper(twins, 1)
    rng = np.random.default_rng(0)
    for step in range(60):
        if step == 20:
            many.set_threads(3)
            assert many.threads == 3 and len(many.slices) == 3 and many.chosen is None
        if step == 45:
            many.set_threads(1)
            assert many.chosen == 1
        actions = rng.uniform(-1, 1, size=(6, 3))
        a, b = one.step(actions, False), many.step(actions, False)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    one.close(), many.close()


def test_a_training_run_takes_a_new_share_between_updates(tmp_path: Path):
    from activities.runner.protocol import ChildRequest
    from activities.runner.supervisor import run_child
    from activities.training import job
    from activities.training.eval_checkpoints import write_marker
    from workers.local.train import _run_sync

    out = tmp_path / "run"
    # The worker gave this run 2 threads at its start, then 1 when another run began.
    write_marker(out / MARKER, {"threads": 1})
    req = ChildRequest(env_id="Hopper-v5", reward_source=RUN_FORWARD, timesteps=2048, threads=2)
    events: list[dict] = []

    async def seen(event: dict) -> None:
        events.append(event)

    summary = _run_sync(lambda: run_child(job.TRAIN, req, out, seen, stall_s=120))
    assert summary["engine"]["threads"] == 1
    # Taken from its start, not after a first rollout on 2 threads: two runs on 2 cores, the
    # one that started on 2 threads made its first 2,048 steps in 7.7 s (265 steps/s) beside
    # the other's 8,000 steps/s (issue 43).
    assert [e["threads"] for e in events if e.get("event") == "threads"] == []
