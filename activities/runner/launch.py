"""Starting a runner child: forked from this worker's template process (template.py) when it
can be, exec'd fresh otherwise.

A forked child skips the ~3 s of CPU a fresh one spends importing torch, SB3, gymnasium and
MuJoCo; it runs the same harness (`child.main`), confined the same way, in its own session,
with the environment the caller gives it. The template is started on first use with that
environment (the children's allowlist: no secrets) and serves every later run whose environment
matches it, apart from what a run may vary (its scratch folder, the sandbox's limits, read when
the run starts them). Any other run, and every run while the template cannot serve, is exec'd
fresh: the template saves time, it protects nothing. POLICYFORGE_CHILD_TEMPLATE=0 turns it off.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Protocol

from activities.runner import template as template_process

log = logging.getLogger(__name__)

# What may differ between the template's environment and a forked run's: read by the run
# itself, after it starts (template.py sets POLICYFORGE_PARENT_PID to the template's pid).
PER_RUN = ("POLICYFORGE_RUN_TMP", "POLICYFORGE_PARENT_PID")
PER_RUN_PREFIXES = ("POLICYFORGE_SANDBOX_",)
RESTART_AFTER_S = 30.0  # after a template ended, runs are exec'd fresh for this long
STREAM_LIMIT = 2**16  # asyncio's subprocess pipes


class TemplateDown(Exception):
    """The template could not fork this run (it ended, or could not import the job)."""


class RunningChild(Protocol):
    """What the supervisor uses of a started child (asyncio's Process has all of it)."""

    pid: int
    stdout: asyncio.StreamReader | None
    stderr: asyncio.StreamReader | None

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


class ForkedChild:
    """A child the template forked: its pid, output streams and exit status."""

    def __init__(
        self,
        pid: int,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        exited: concurrent.futures.Future[int],
    ) -> None:
        self.pid = pid
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr
        self._exited = exited

    @property
    def returncode(self) -> int | None:
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        return await asyncio.wrap_future(self._exited)


def _comparable(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in PER_RUN and not k.startswith(PER_RUN_PREFIXES)}


class Template:
    """One running template process and the thread that reads its answers."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = _comparable(env)  # what a run may vary stays out: each run brings its own
        self.alive = True
        self.ended_at: float | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._pending: dict[int, concurrent.futures.Future[tuple[int, Any]]] = {}
        self._exits: dict[int, concurrent.futures.Future[int]] = {}
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        started = threading.Event()
        # Popen on a thread that lives as long as the worker: PR_SET_PDEATHSIG fires when the
        # thread that started the template ends, not only the process.
        self._thread = threading.Thread(
            target=self._run, args=(theirs, started), name="runner-template", daemon=True
        )
        self._thread.start()
        started.wait()

    def matches(self, env: dict[str, str]) -> bool:
        return self.alive and _comparable(env) == self.env

    def fork(
        self, module: str, args: list[str], cwd: str, env: dict[str, str], fds: list[int]
    ) -> concurrent.futures.Future[tuple[int, concurrent.futures.Future[int]]]:
        """Ask for a child; resolves to (pid, its exit status future)."""
        future: concurrent.futures.Future[tuple[int, Any]] = concurrent.futures.Future()
        with self._lock:
            if not self.alive:
                raise TemplateDown("the runner template has ended")
            request_id = next(self._ids)
            self._pending[request_id] = future
            message = {"id": request_id, "module": module, "args": args, "cwd": cwd, "env": env}
            try:
                template_process.send(self._sock, message, fds)
            except OSError as exc:
                self._pending.pop(request_id)
                raise TemplateDown(f"the runner template is unreachable: {exc}") from exc
        return future

    def warm(self, module: str) -> None:
        """Have the template import a job module now (a failure shows at the first run)."""
        with self._lock, contextlib.suppress(OSError):
            if self.alive:
                template_process.send(self._sock, {"warm": module})

    def _run(self, theirs: socket.socket, started: threading.Event) -> None:
        proc: subprocess.Popen[bytes] | None = None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", template_process.__name__, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                # The template's own die-with-parent check (template.py) is against us.
                env={**self.env, "POLICYFORGE_PARENT_PID": str(os.getpid())},
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("runner template did not start (%s): children start fresh", exc)
        finally:
            theirs.close()
            started.set()
        try:
            if proc is not None:
                self._listen()
        finally:
            self._end(proc)

    def _listen(self) -> None:
        while True:
            data = self._sock.recv(template_process.MAX_MESSAGE)
            if not data:
                return
            message = json.loads(data)
            if "id" in message:
                future = self._pending.pop(message["id"])
                if future.done():  # cancelled: nobody will supervise this child
                    if "pid" in message:
                        kill_group(message["pid"])
                elif "error" in message:
                    future.set_exception(TemplateDown(message["error"]))
                else:
                    self._exits[message["pid"]] = concurrent.futures.Future()
                    future.set_result((message["pid"], self._exits[message["pid"]]))
            elif "returncode" in message:
                exited = self._exits.pop(message["pid"], None)
                if exited is not None:  # None: a child killed unsupervised, above
                    exited.set_result(message["returncode"])

    def _end(self, proc: subprocess.Popen[bytes] | None) -> None:
        """The template is gone: its children died with it (PR_SET_PDEATHSIG)."""
        with self._lock:
            self.alive = False
            self.ended_at = time.monotonic()
            self._sock.close()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(TemplateDown("the runner template ended"))
        for exited in self._exits.values():
            exited.set_result(-signal.SIGKILL)
        self._pending.clear()
        self._exits.clear()
        if proc is not None:
            proc.kill()
            proc.wait()


_lock = threading.Lock()
_current: Template | None = None


def _template_for(env: dict[str, str]) -> Template | None:
    """The template a run with `env` can be forked from (started now if there is none)."""
    global _current
    if os.environ.get("POLICYFORGE_CHILD_TEMPLATE", "1") == "0":
        return None
    with _lock:
        if _current is not None and not _current.alive:
            assert _current.ended_at is not None
            if time.monotonic() - _current.ended_at < RESTART_AFTER_S:
                return None
            _current = None
        if _current is None:
            _current = Template(env)
        return _current if _current.matches(env) else None


async def _reader(fd: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
    pipe = os.fdopen(fd, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    return reader


async def _fork(
    template: Template, module: str, args: list[str], cwd: str, env: dict[str, str]
) -> ForkedChild:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        # The message carries copies of the descriptors: ours close here either way.
        future = template.fork(module, args, cwd, env, [null, out_w, err_w])
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        for fd in (null, out_w, err_w):
            os.close(fd)
    try:
        # Shielded: cancelling this wait must not cancel the request, whose pid is needed to
        # kill the child it forks.
        pid, exited = await asyncio.shield(asyncio.wrap_future(future))
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        # Cancelled before the pid came: the child must not run on unsupervised.
        future.add_done_callback(_kill_forked)
        raise
    try:
        return ForkedChild(pid, await _reader(out_r), await _reader(err_r), exited)
    except BaseException:
        kill_group(pid)
        raise


def _kill_forked(future: concurrent.futures.Future[tuple[int, Any]]) -> None:
    if not future.cancelled() and future.exception() is None:
        kill_group(future.result()[0])


def kill_group(pid: int) -> None:
    """SIGKILL a child's whole process group (its sandbox included); gone already is fine.
    Every child leads a session of its own, forked or exec'd."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def launch(module: str, args: list[str], cwd: str, env: dict[str, str]) -> RunningChild:
    """`python -m module *args` in `cwd` with `env`, in a session of its own, stdin empty and
    stdout, stderr piped: forked from the template when it can serve `env`."""
    template = _template_for(env)
    if template is not None:
        try:
            return await _fork(template, module, args, cwd, env)
        except TemplateDown as exc:
            log.warning("runner template could not fork (%s): this child starts fresh", exc)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        limit=STREAM_LIMIT,
    )


def prewarm(module: str, env: dict[str, str]) -> None:
    """Start the template now and have it import `module` (a worker's job module) while the
    worker waits for its first task."""
    template = _template_for(env)
    if template is None:
        return
    template.warm(module)
