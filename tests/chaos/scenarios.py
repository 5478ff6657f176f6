"""The scenarios, each a coroutine that runs sessions on a stack while it injects one fault (or
load) and returns its row. `Sizes` holds the short (CI) and long numbers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowHandle

from activities.artifacts import ArtifactStore
from tests.chaos.checks import Outcome, activity_retries, finish, start
from tests.chaos.report import Row, percentile
from tests.chaos.stack import LLM_TIMEOUT_S, PROVIDER_KEY, Stack
from tests.fakes.llm_server import Faults
from tests.processes import checkpoint_in_heartbeat, still_running
from workflows.contracts.session import RunRecord, SessionResult


@dataclass(frozen=True)
class Sizes:
    """How many trials each scenario runs, and how long its sessions train."""

    llm_sessions: int = 2
    fault_rate: float = 0.3
    kills: int = 1
    concurrent: int = 3
    restarts: int = 1
    downtime_s: float = 3.0
    timesteps: int = 2048  # sessions that only need to finish
    # Sessions whose training is faulted: a kill must come after the checkpoint's heartbeat
    # reached the server (heartbeats are throttled to one per 5 s), a restart while it runs.
    kill_timesteps: int = 16_384
    restart_timesteps: int = 8192
    # Generous: CI runs this beside the other test process on 2 cores, and a loaded machine
    # once took the three fault-injected LLM sessions past 240 s. A lost session still fails.
    session_timeout_s: float = 480.0


SHORT = Sizes()
LONG = Sizes(
    llm_sessions=10,
    kills=3,
    concurrent=20,
    restarts=3,
    downtime_s=10.0,
    timesteps=4096,
    kill_timesteps=20_480,
    restart_timesteps=20_480,
    session_timeout_s=1800.0,
)

Scenario = Callable[[Stack, Sizes], Awaitable[Row]]


def _tally(row: Row, outcomes: list[Outcome]) -> Row:
    row.finished = sum(o.finished for o in outcomes)
    row.lost = sum(o.lost for o in outcomes)
    row.problems += [p for o in outcomes for p in o.problems]
    return row


# --- 1. secret scan ---------------------------------------------------------------------------


async def secret_scan(stack: Stack, sizes: Sizes) -> Row:
    """An offline and an LLM session (fake provider key); then every worker and server log
    line, every history event and every S3 object is searched for the provider key and the S3
    secret key."""
    assert stack.client is not None and stack.llm is not None
    store = stack.store()
    handles = [
        await start(stack, timesteps=sizes.timesteps),
        await start(stack, llm=True, timesteps=sizes.timesteps),
    ]
    outcomes = list(
        await asyncio.gather(*(finish(store, h, sizes.session_timeout_s) for h in handles))
    )
    row = _tally(Row("secret_scan", trials=len(handles)), outcomes)
    secrets = [PROVIDER_KEY.encode(), stack.s3_secret.encode()]
    used = [
        r
        for r in stack.llm.requests
        if PROVIDER_KEY in r.headers.get("x-api-key", "") + r.headers.get("authorization", "")
    ]
    if not used:
        row.problems.append("the fake provider key never reached the LLM server: nothing to find")

    def hits_in(blob: bytes) -> int:
        return sum(blob.count(s) for s in secrets)

    hits: dict[str, int] = {"logs": 0, "history": 0, "s3": 0}
    lines = stack.log_lines() + stack.server_log_lines()
    hits["logs"] = sum(hits_in(line.encode()) for line in lines)
    events = 0
    for handle in handles:
        history = await handle.fetch_history()
        events += len(history.events)
        hits["history"] += hits_in(history.to_json().encode())
        hits["history"] += sum(hits_in(e.SerializeToString()) for e in history.events)
    keys = await asyncio.to_thread(store.list_keys, "")
    for key in keys:
        hits["s3"] += hits_in(await asyncio.to_thread(store.get_bytes, key))
    row.figures = {
        "log_lines": len(lines),
        "events": events,
        "objects": len(keys),
        "llm_calls": len(used),
        "hits": sum(hits.values()),
    }
    row.problems += [f"{n} secret hit(s) in {where}" for where, n in hits.items() if n]
    return row


# --- 2. LLM provider faults -------------------------------------------------------------------


async def llm_faults(stack: Stack, sizes: Sizes) -> Row:
    """LLM sessions through the fake server while it fails `fault_rate` of the calls: 429 with
    retry-after, 500, 503, answers slower than the client timeout, malformed bodies."""
    assert stack.client is not None and stack.llm is not None
    faults = Faults(rate=sizes.fault_rate, seed=1, slow_s=2 * LLM_TIMEOUT_S)
    store = stack.store()
    before = len(stack.llm.requests)
    stack.llm.faults = faults
    try:
        handles = [
            await start(stack, llm=True, timesteps=sizes.timesteps)
            for _ in range(sizes.llm_sessions)
        ]
        outcomes = list(
            await asyncio.gather(*(finish(store, h, sizes.session_timeout_s) for h in handles))
        )
    finally:
        stack.llm.faults = None
    row = _tally(Row("llm_faults", trials=len(handles)), outcomes)
    retries = [await activity_retries(stack.client, h.id) for h in handles]
    requests = len(stack.llm.requests) - before
    row.figures = {
        "requests": requests,
        "faults": faults.total,
        "fault_pct": round(100 * faults.total / max(1, requests)),
        **{f"f{kind}": n for kind, n in sorted(faults.injected.items())},
        "retries": sum(retries),
    }
    if faults.total == 0:
        row.problems.append("no fault was injected")
    return row


# --- 3. training worker SIGKILLed ---------------------------------------------------------------


async def _pending_train(handle: WorkflowHandle[Any, SessionResult]) -> Any | None:
    desc = await handle.describe()
    for pending in desc.raw_description.pending_activities:
        if pending.activity_type.name == "train_policy":
            return pending
    return None


async def _until_trained_again(
    handle: WorkflowHandle[Any, SessionResult], after: float, attempt: int, timeout: float
) -> float | None:
    """Seconds from `after` (a time.time()) until a later attempt of the training heartbeats,
    or the workflow closes; None past `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pending = await _pending_train(handle)
            if pending is None:
                return time.time() - after  # done (or the workflow closed)
            beat = pending.last_heartbeat_time.ToSeconds() if pending.last_heartbeat_time else 0
            if pending.attempt > attempt and beat > after:
                return time.time() - after
        except Exception:  # noqa: BLE001 - the server may be down, or coming back
            pass
        await asyncio.sleep(0.25)
    return None


async def train_kill(stack: Stack, sizes: Sizes) -> Row:
    """A session per kill: the train worker is SIGKILLed after the first checkpoint and a new
    one started; the retried training resumes from the checkpoint and the session finishes."""
    assert stack.client is not None
    store = stack.store()
    outcomes: list[Outcome] = []
    recoveries: list[float] = []
    resumed = 0
    family: set[int] = set()
    for _ in range(sizes.kills):
        handle = await start(stack, timesteps=sizes.kill_timesteps)
        details = await checkpoint_in_heartbeat(handle, timeout=sizes.session_timeout_s)
        pending = await _pending_train(handle)
        attempt = pending.attempt if pending is not None else 1
        late = [] if pending is not None else [f"{handle.id}: trained before the kill came"]
        killed_at = time.time()
        family |= stack.kill_worker("train")
        stack.start_worker("train")
        recovery = await _until_trained_again(handle, killed_at, attempt, sizes.session_timeout_s)
        outcome = await finish(store, handle, sizes.session_timeout_s)
        outcome.problems += late
        outcomes.append(outcome)
        if recovery is None:
            outcome.problems.append(f"{handle.id}: training did not come back after the kill")
        else:
            recoveries.append(recovery)
        if outcome.result is not None and outcome.result.best is not None:
            problems = await asyncio.to_thread(
                _resume_problems,
                store,
                outcome.result.best.best_run,
                details["checkpoint_timesteps"],
                sizes.kill_timesteps,
            )
            outcome.problems += [f"{handle.id}: {p}" for p in problems]
            resumed += not problems
    if not any("resuming" in line for line in stack.log_lines()):
        outcomes[-1].problems.append("no train worker logged that it resumed")
    # The killed worker's runner template and training children died with it.
    outcomes[-1].problems += [
        f"pid {p} outlived the kill of its worker" for p in still_running(family)
    ]
    row = _tally(Row("train_kill", trials=len(outcomes)), outcomes)
    row.figures = {
        "kills": len(outcomes),
        "resumed": resumed,
        "max_recovery_s": max(recoveries, default=0.0),
    }
    return row


def _resume_problems(store: ArtifactStore, run: RunRecord, killed_at: int, total: int) -> list[str]:
    """What is wrong with a run resumed after the kill: it must have continued its counter from
    the checkpoint seen before the kill (not from zero), kept the first attempt's scalars, and
    have its last evaluation checkpoint and final episode kept."""
    summary = json.loads(store.get_text(run.run_prefix + "summary.json"))
    start_at = summary.get("resumed_from_timesteps")
    problems = []
    if start_at is None or not killed_at <= start_at < total:
        problems.append(f"training restarted from {start_at}, not from {killed_at} or later")
    if summary["timesteps_done"] < total:
        problems.append(f"trained {summary['timesteps_done']} of {total} steps")
    lines = store.get_text(run.run_prefix + "metrics/scalars.jsonl").splitlines()
    steps = [json.loads(line)["timesteps"] for line in lines]
    # A row at the checkpoint's own count was written before the kill (the checkpoint follows
    # the update that wrote it).
    if not steps or min(steps) > killed_at:
        problems.append("the scalars from before the kill were lost")
    kept = [run.video_key, run.trajectory_key, run.run_prefix + "evals/pct_100/returns.json"]
    problems += [f"{key} missing" for key in kept if not key or not store.exists(key)]
    return problems


# --- 4. concurrent sessions ---------------------------------------------------------------------


async def concurrent(stack: Stack, sizes: Sizes) -> Row:
    """`concurrent` small offline sessions started at once on one machine."""
    store = stack.store()
    began = time.monotonic()
    handles = [await start(stack, timesteps=sizes.timesteps) for _ in range(sizes.concurrent)]
    timeout = sizes.session_timeout_s * max(1, sizes.concurrent // 4)
    outcomes = list(await asyncio.gather(*(finish(store, h, timeout) for h in handles)))
    row = _tally(Row("concurrent", trials=len(handles)), outcomes)
    walls = [o.wall_s for o in outcomes if o.finished]
    row.figures = {
        "p50_s": percentile(walls, 50),
        "p95_s": percentile(walls, 95),
        "all_s": time.monotonic() - began,
    }
    return row


# --- 5 and 6. servers killed and restarted ------------------------------------------------------


async def _training_started(handle: WorkflowHandle[Any, SessionResult], timeout: float) -> None:
    """Wait until a worker runs the session's training."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = await _pending_train(handle)
        if (
            pending is not None
            and pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
        ):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{handle.id}: training did not start in {timeout:.0f}s")


async def _checkpoint_uploaded(
    stack: Stack, handle: WorkflowHandle[Any, SessionResult], timeout: float
) -> None:
    """Wait until the session's training has uploaded a checkpoint (so more are on their way)."""
    store = stack.store()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        keys = await asyncio.to_thread(store.list_keys, f"sessions/{handle.id}/")
        if any("/checkpoints/step_" in key for key in keys):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{handle.id}: no checkpoint was uploaded in {timeout:.0f}s")


async def _restart_mid_training(
    stack: Stack,
    sizes: Sizes,
    name: str,
    kill: Callable[[], None],
    restart: Callable[[], None],
    ready: Callable[[WorkflowHandle[Any, SessionResult]], Awaitable[None]],
) -> tuple[Row, list[Outcome]]:
    store = stack.store()
    outcomes: list[Outcome] = []
    downtimes: list[float] = []
    recoveries: list[float] = []
    for _ in range(sizes.restarts):
        handle = await start(stack, timesteps=sizes.restart_timesteps)
        await ready(handle)
        pending = await _pending_train(handle)
        attempt = (pending.attempt - 1) if pending is not None else 0
        late = [] if pending is not None else [f"{handle.id}: trained before the {name} came"]
        down_at = time.monotonic()
        kill()
        await asyncio.sleep(sizes.downtime_s)
        await asyncio.to_thread(restart)
        downtimes.append(time.monotonic() - down_at)
        restarted = time.time()
        # Any attempt counts: the running one heartbeating again, or a retry.
        recovery = await _until_trained_again(handle, restarted, attempt, sizes.session_timeout_s)
        outcome = await finish(store, handle, sizes.session_timeout_s)
        outcome.problems += late
        if recovery is None:
            outcome.problems.append(f"{handle.id}: no progress after the restart")
        else:
            recoveries.append(recovery)
        outcomes.append(outcome)
    row = _tally(Row(name, trials=len(outcomes)), outcomes)
    row.figures = {
        "restarts": len(outcomes),
        "max_downtime_s": max(downtimes, default=0.0),
        "max_recovery_s": max(recoveries, default=0.0),
    }
    return row, outcomes


async def temporal_restart(stack: Stack, sizes: Sizes) -> Row:
    """The Temporal dev server is SIGKILLed as soon as a session trains, and restarted on the same
    SQLite file after `downtime_s`; the session goes on and finishes."""
    row, _ = await _restart_mid_training(
        stack,
        sizes,
        "temporal_restart",
        stack.kill_temporal,
        stack.start_temporal,
        lambda handle: _training_started(handle, sizes.session_timeout_s),
    )
    return row


async def s3_restart(stack: Stack, sizes: Sizes) -> Row:
    """SeaweedFS is SIGKILLed once training has uploaded its first checkpoint (more follow),
    and restarted on the same data after `downtime_s`; the artifacts match their upload
    checksums and the model loads."""
    row, outcomes = await _restart_mid_training(
        stack,
        sizes,
        "s3_restart",
        stack.kill_s3,
        stack.start_s3,
        lambda handle: _checkpoint_uploaded(stack, handle, sizes.session_timeout_s),
    )
    loaded = 0
    for outcome in outcomes:
        if outcome.result is None or outcome.result.best is None:
            continue
        key = outcome.result.best.best_run.model_key
        try:
            await asyncio.to_thread(_load_model, stack, key)
            loaded += 1
        except Exception as exc:  # noqa: BLE001 - a model that does not load was lost
            outcome.problems.append(f"{key}: does not load ({exc})")
            row.problems.append(f"{key}: does not load ({exc})")
    row.lost = sum(o.lost for o in outcomes)
    row.figures["models_loaded"] = loaded
    return row


def _load_model(stack: Stack, key: str) -> None:
    import tempfile
    from pathlib import Path

    from stable_baselines3 import PPO

    with tempfile.TemporaryDirectory() as tmp:
        path = stack.store().download(key, Path(tmp) / "model.zip")
        PPO.load(path, device="cpu")


SCENARIOS: dict[str, Scenario] = {
    "secret_scan": secret_scan,
    "llm_faults": llm_faults,
    "train_kill": train_kill,
    "concurrent": concurrent,
    "temporal_restart": temporal_restart,
    "s3_restart": s3_restart,
}
