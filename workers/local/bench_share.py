"""`policyforge bench-share`: two training runs at once on this machine, each against its
speed alone: do they share the cores fairly?

Each run is the real confined training child (`run_child(job.TRAIN, ...)`) on the env's own
reward, given its threads the way a train worker gives them:

- one worker: both runs under the same worker's core share (`core_share.sharing_cores`), which
  re-shares the cores as runs start and end;
- two workers: each run under a share of its own (two workers on one machine, or two `dev`
  stacks), so only the children's own measure of the free cores (`free_cores.py`) keeps them
  from running more compute threads than there are cores.

With `beside`, each run is what a session's training is: the training child handing its
evaluation checkpoints to the evaluator beside it, which keeps them and plays (and draws) the
final evaluation episode (`beside.train_beside`, as train_policy runs them). Two sessions then
put four children on the cores, and each session's speed alone already has its evaluator in it.

The two runs are on one env, or one on each of two envs. A run's speed is its steps over its
training time (its summary's steps_per_second); the runs alone go first, one after the other,
then the two together. Issue 43's bound: each at least 40 % of its speed alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.training import beside, job
from activities.training.core_share import Share, sharing_cores
from activities.training.cores import cores
from activities.training.train_activity import EVAL_CHECKPOINT_EPISODES, train_timeout_s
from workers.local.bench_train import reward_source

Mode = Literal["worker", "workers"]
FAIR_SHARE = 0.4  # each run at least this share of its speed alone


@dataclass(frozen=True)
class Speeds:
    """Steps per second of each run alone and of the same runs together."""

    alone: list[float]
    together: list[float]

    def ratios(self) -> list[float]:
        return [t / a if a else 0.0 for a, t in zip(self.alone, self.together, strict=True)]

    def fair(self) -> bool:
        return all(r >= FAIR_SHARE for r in self.ratios())


@contextlib.contextmanager
def _share(mode: Mode) -> Iterator[Share]:
    if mode == "worker":
        with sharing_cores() as share:
            yield share
    else:  # a worker of its own: all its cores for its one run
        yield Share(1, threads=cores())


async def _train(
    env_id: str, timesteps: int, seed: int, mode: Mode, root: Path, *, with_eval: bool
) -> float:
    """One run's steps per second of training (beside its evaluator when `with_eval`)."""
    out = Path(tempfile.mkdtemp(prefix=f"seed{seed}-", dir=root))
    with _share(mode) as share:
        req = ChildRequest(
            env_id=env_id,
            reward_source=reward_source(env_id),
            timesteps=timesteps,
            seed=seed,
            threads=share.threads,
            eval_checkpoint_episodes=EVAL_CHECKPOINT_EPISODES if with_eval else 0,
            eval_handoff=with_eval,
        )
        share.follow(out)
        began = time.monotonic()

        async def threads(event: dict[str, Any]) -> None:
            # When a run's threads change, and to what: the core share at work.
            if event.get("event") == "threads":
                at = time.monotonic() - began
                print(f"    {env_id} seed {seed} at {at:5.1f} s: {event['threads']} threads")

        # The limits train_policy gives a run of these steps, and its evaluator beside it.
        limit = train_timeout_s(timesteps)
        training = run_child(job.TRAIN, req, out, threads, timeout_s=limit)
        if not with_eval:
            summary = await training
        else:
            side = beside.request(req, out, final_eval=True)
            evaluating = run_child(
                job.EVALUATE_BESIDE, side, out.with_name(out.name + "-eval"), timeout_s=limit
            )
            summary = (await beside.train_beside(training, evaluating)).summary
    return float(summary["steps_per_second"])


async def bench_share(
    env_ids: tuple[str, str], timesteps: int, mode: Mode, *, with_eval: bool = False
) -> Speeds:
    """The two runs alone (one after the other), then together."""
    with tempfile.TemporaryDirectory(prefix="pf-bench-share-") as tmp:
        root = Path(tmp)
        runs = list(enumerate(env_ids))
        alone = [
            await _train(env_id, timesteps, seed, mode, root, with_eval=with_eval)
            for seed, env_id in runs
        ]
        together = await asyncio.gather(
            *(
                _train(env_id, timesteps, seed, mode, root, with_eval=with_eval)
                for seed, env_id in runs
            )
        )
    return Speeds(alone, list(together))


def report(
    env_ids: tuple[str, str], mode: Mode, speeds: Speeds, *, with_eval: bool = False
) -> list[str]:
    """The bench's lines: each run alone and together, and the verdict."""
    where = "one train worker" if mode == "worker" else "two train workers"
    what = "two runs, each beside its evaluator," if with_eval else "two runs"
    lines = [f"{what} on {cores()} cores, {where}:"]
    rows = zip(env_ids, speeds.alone, speeds.together, speeds.ratios(), strict=True)
    for i, (env_id, a, t, r) in enumerate(rows):
        lines.append(
            f"  run {i} ({env_id}): alone {a:,.0f} steps/s, together {t:,.0f} steps/s ({r:.0%})"
        )
    verdict = "fair" if speeds.fair() else "NOT fair"
    lines.append(f"  {verdict}: each run at least {FAIR_SHARE:.0%} of its speed alone")
    return lines
