"""Running a child (a stage's job module) from a worker or the CLI, on a short leash.

The caller names the job (`ChildJob`: the stage's module and mode); this module knows no stage.
The child (the runner: trusted trainer and evaluator code, which starts the sandbox process for
generated code itself) gets its own process group (killed whole, sandbox included, on cancel or
timeout) and an environment holding no secrets (an allowlist: no AWS_*, no provider keys). Its
output folder is written by it alone; the generated code's scratch folder is elsewhere. It is
forked from the worker's template process when it can be (launch.py), exec'd fresh otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.runner import launch as launcher
from activities.runner import run_dirs
from activities.runner.protocol import RESULT_FILE, ChildFailed, ChildJob, ChildRequest
from activities.sandbox.scrub import remove_tree

log = logging.getLogger(__name__)

OnEvent = Callable[[dict[str, Any]], Awaitable[None] | None]

REPO_ROOT = Path(__file__).resolve().parents[2]
# Variables the child may see; everything else (credentials, provider keys) stays behind.
_ENV_ALLOW = {"PATH", "HOME", "LANG", "TMPDIR", "TZ", "MUJOCO_GL", "PYOPENGL_PLATFORM"}
_ENV_ALLOW_PREFIXES = (
    "LC_",
    "EGL_",
    "__EGL_",
    "MESA_",
    "LIBGL_",
    "GALLIUM_",
    "LD_LIBRARY_PATH",
    "POLICYFORGE_SANDBOX_",  # the sandbox's own limits (call budgets, memory)
    "POLICYFORGE_TRAIN_PRECISION",  # the engine's update precision
)
STDERR_TAIL = 40


def repo_pythonpath() -> str:
    """PYTHONPATH for a child run outside the repository root: our packages first."""
    return os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])


def child_env() -> dict[str, str]:
    """The child's environment: an allowlist of the worker's (no credentials), plus ours."""
    env = {
        k: v for k, v in os.environ.items() if k in _ENV_ALLOW or k.startswith(_ENV_ALLOW_PREFIXES)
    }
    env.setdefault("MUJOCO_GL", "egl")
    # The child's working directory is a scratch folder: make our packages importable anyway.
    env["PYTHONPATH"] = repo_pythonpath()
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    env["PYTHONUNBUFFERED"] = "1"
    # One thread unless a training run is given more (torch.set_num_threads in the child). Not
    # OMP_WAIT_POLICY=PASSIVE: waking sleeping threads for each small matmul made a two-thread
    # update slower than one thread.
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = "1"
    env["POLICYFORGE_PARENT_PID"] = str(os.getpid())
    return env


def prewarm(*modules: str) -> None:
    """At a worker's start (after its folders were cleaned, workers/pools/pools.py): start this
    worker's runner template (launch.py) and have it import these job modules now, so the
    first run forks as fast as later ones."""
    for module in modules:
        launcher.prewarm(module, child_env())


async def _drain(stream: asyncio.StreamReader, tail: deque[str]) -> None:
    async for raw in stream:
        line = raw.decode(errors="replace").rstrip()
        if line and "settotalmass" not in line:
            tail.append(line)


async def run_child(
    job: ChildJob,
    req: ChildRequest,
    out_dir: Path,
    on_event: OnEvent | None = None,
    *,
    timeout_s: float | None = None,
    stall_s: float | None = None,
    timeout_is_reward_fault: bool = False,
) -> dict[str, Any]:
    """Run `job` to completion; return its result.json, or raise ChildFailed.

    stall_s: fail when the child prints nothing for that long (a hung reward or simulator).
    Cancellation kills the whole process group before CancelledError propagates.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    req_path = out_dir / f"request_{job.mode}.json"
    req_path.write_text(req.model_dump_json())
    (out_dir / RESULT_FILE).unlink(missing_ok=True)
    # The sandbox's scratch lives here: removed below even when the child is killed, and at
    # the next worker's start when this one is (it is named after this process).
    run_tmp = run_dirs.make_run_dir()
    try:
        return await _run(
            job, req_path, out_dir, on_event, timeout_s, stall_s, timeout_is_reward_fault, run_tmp
        )
    finally:
        remove_run_dir(run_tmp)


def remove_run_dir(path: str) -> None:
    """Remove a run's folder, whatever tree generated code left in it; never raises into the
    worker: what stays is logged in one line (and reaped at the next worker's start)."""
    try:
        left = remove_tree(path)
    except Exception as exc:  # noqa: BLE001 - remove_tree does not raise; nothing else may
        left = f"{path}: {type(exc).__name__}: {exc}"
    if left:
        log.warning("run folder not removed: %s", left)


async def _run(
    job: ChildJob,
    req_path: Path,
    out_dir: Path,
    on_event: OnEvent | None,
    timeout_s: float | None,
    stall_s: float | None,
    timeout_is_reward_fault: bool,
    run_tmp: str,
) -> dict[str, Any]:
    proc = await launcher.launch(
        job.module,
        [job.mode, "--request", str(req_path), "--out", str(out_dir)],
        str(out_dir),
        {**child_env(), "POLICYFORGE_RUN_TMP": run_tmp},
    )
    assert proc.stdout is not None and proc.stderr is not None
    tail: deque[str] = deque(maxlen=STDERR_TAIL)
    drain = asyncio.create_task(_drain(proc.stderr, tail))
    try:
        try:
            async with asyncio.timeout(timeout_s):
                await _follow(proc.stdout, on_event, stall_s, job.mode)
                returncode = await proc.wait()
        except TimeoutError:
            raise ChildFailed(
                f"{job.mode} did not finish within {timeout_s:.0f}s", timeout_is_reward_fault
            ) from None
        await drain
    finally:
        # On success this only reaps stragglers; on error or cancellation it stops the run.
        launcher.kill_group(proc.pid)
        if proc.returncode is None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), 5)
        drain.cancel()
    return _result(out_dir, returncode, tail, job.mode)


async def _follow(
    stdout: asyncio.StreamReader, on_event: OnEvent | None, stall_s: float | None, mode: str
) -> None:
    while True:
        try:
            raw = await asyncio.wait_for(stdout.readline(), stall_s)
        except TimeoutError:
            raise ChildFailed(f"{mode} made no progress for {stall_s:.0f}s", False) from None
        if not raw:
            return
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if on_event is not None and isinstance(event, dict):
            out = on_event(event)
            if inspect.isawaitable(out):
                await out


def _result(out_dir: Path, returncode: int, tail: deque[str], mode: str) -> dict[str, Any]:
    path = out_dir / RESULT_FILE
    result: dict[str, Any] | None = None
    if path.exists():
        with contextlib.suppress(ValueError):
            result = json.loads(path.read_text())
    if returncode == 0 and result and result.get("ok"):
        return result
    if result and result.get("error"):
        raise ChildFailed(
            str(result["error"]),
            bool(result.get("reward_fault")),
            bool(result.get("sandbox_unavailable")),
        )
    # Killed (e.g. out of memory) or crashed before writing a result: the last stderr line.
    how = f"signal {-returncode}" if returncode < 0 else f"status {returncode}"
    last = tail[-1] if tail else "no output"
    raise ChildFailed(f"{mode} child exited with {how}: {last}", False)


def sandbox_refused(exc: ChildFailed) -> ApplicationError | None:
    """A required sandbox layer is missing on this worker: no retry here can help, and the
    one line says which layer and which setting accepts it knowingly."""
    if not exc.sandbox_unavailable:
        return None
    return ApplicationError(exc.message, type="SandboxUnavailable", non_retryable=True)
