"""The trusted side of the sandbox: the process and its channel. Starts the sandbox process,
checks its layers, and talks to it in frames (see `wire.py`); its stderr is drained into a short
tail for the one-line error of a process that died.

Everything that comes back is parsed as JSON or float64 arrays and checked by the caller; a
process that dies, hangs or answers out of format is the generated code's fault (`CodeFault`),
reported in one line. The reward's trusted side is `reward_client.py`, the judge's
`judge_client.py`.

    with SandboxClient() as box:
        rewards = SandboxRewards(box, source, "reward_fn.py")
        rid = rewards.new_instance()
        [(total, terms)] = rewards.score([(rid, obs, action, next_obs, info)])
        judgments = judge_all(box, judge_source, "judge_fn.py", trajectories, criteria)
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from activities.sandbox import layers, scrub, watchdog, wire
from activities.sandbox.errors import one_line
from activities.sandbox.limits import SCRATCH_TMPFS

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120.0  # numpy import and the layers; slow only on a loaded machine
LOAD_TIMEOUT_S = 30.0
STDERR_TAIL_BYTES = 4000
WHERE_WAIT_S = 2.0  # for a sandbox asked where it is to answer
STDERR_WAIT_S = 1.0  # for the stderr drain to reach EOF once the sandbox has exited
_STDERR_CHUNK = 1 << 16


class CodeFault(RuntimeError):
    """Generated code failed, hung, died or answered out of format; one line. `where`: the
    code's file and line it was running when a deadline passed ("" when it did not say)."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def sandbox_env(scratch: Path) -> dict[str, str]:
    """Built from nothing: no variable of the worker's reaches generated code, but the
    sandbox's own settings."""
    env = {
        "PYTHONPATH": str(REPO_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONWARNINGS": "ignore",
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "POLICYFORGE_PARENT_PID": str(os.getpid()),
    }
    env.update({k: v for k, v in os.environ.items() if k.startswith("POLICYFORGE_SANDBOX_")})
    return env


class _StderrTail:
    """The sandbox's stderr pipe, drained by a daemon thread into its last STDERR_TAIL_BYTES:
    the sandbox never blocks on a full pipe, and this side never holds more than a tail."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._tail = bytearray()
        self.dropped = 0  # bytes read and let go: all but the tail
        self._thread = threading.Thread(target=self._drain, name="sandbox-stderr", daemon=True)
        try:
            self._thread.start()
        except RuntimeError:
            os.close(fd)  # undrained, the sandbox would block on its stderr: it gets EPIPE
            raise

    def _drain(self) -> None:
        # The thread owns the read end and closes it at EOF: closed from another thread while
        # a read blocks on it, its number could be reused and read from here.
        try:
            while chunk := os.read(self._fd, _STDERR_CHUNK):
                self._keep(chunk)
        except OSError:
            pass
        finally:
            os.close(self._fd)

    def _keep(self, chunk: bytes) -> None:
        with self._lock:
            self._tail += chunk
            over = len(self._tail) - STDERR_TAIL_BYTES
            if over > 0:
                del self._tail[:over]
                self.dropped += over

    def finish(self, wait_s: float) -> bool:
        """Wait up to wait_s for the end of the pipe; whether the drain is over (its end
        closed). It reads on past that only while a process still holds a write end."""
        self._thread.join(wait_s)
        return not self._thread.is_alive()

    def tail(self, wait_s: float = 0.0) -> bytes:
        """The last bytes written, after waiting up to wait_s for the end of the pipe."""
        self.finish(wait_s)
        with self._lock:
            return bytes(self._tail)


class SandboxClient:
    """One sandbox process and its scratch folder (removed on close)."""

    def __init__(
        self,
        *,
        cpu_s: int = 0,
        memory_mb: int = 0,
        probe: bool = False,
        call_timeout_s: float = 30.0,
    ) -> None:
        # Under the run's own temporary folder when the supervisor gave one (removed with the
        # run, even when this process is killed), else under TMPDIR.
        root = os.environ.get("POLICYFORGE_RUN_TMP") or None
        self.scratch = Path(tempfile.mkdtemp(prefix="pf-sandbox-", dir=root))
        self.call_timeout_s = call_timeout_s
        argv = [sys.executable, "-m", "activities.sandbox.host", "--scratch", str(self.scratch)]
        argv += ["--cpu-s", str(cpu_s), "--memory-mb", str(memory_mb)]
        if probe:
            argv.append("--probe")
        # stderr is a pipe, drained here: a file on the real disk would be one more file the
        # code could fill or reserve disk with.
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=write_end,
                cwd=self.scratch,
                env=sandbox_env(self.scratch),
                close_fds=True,
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # the sandbox holds the only write end: EOF when it is gone
        self._stderr = _StderrTail(read_end)
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self._stdin_fd = self.proc.stdin.fileno()
        # Writes have a deadline too (`call`): a sandbox that stopped reading (stopped, wedged)
        # would otherwise hold the runner on a full pipe forever.
        os.set_blocking(self._stdin_fd, False)
        _widen(self._stdin_fd, self.proc.stdout.fileno())
        self._watch: watchdog.Watch | None = None
        try:
            # Its threads, CPU time and scratch, watched from this process (watchdog.py).
            watch = watchdog.Watch(self.proc.pid, self.scratch, cpu_s)
        except OSError as exc:
            self.close()
            raise layers.SandboxUnavailable(f"the sandbox cannot be watched: {exc}") from None
        self._watch = watch
        self._reader = watchdog.TimedReader(self.proc.stdout.fileno(), watch)
        try:
            ready, _ = self._read(START_TIMEOUT_S, "starting the sandbox")
        except CodeFault as exc:
            self.close()
            raise layers.SandboxUnavailable(f"the sandbox process did not start: {exc}") from None
        self.applied = [str(x) for x in ready.get("applied", [])]
        self.missing = {str(k): str(v) for k, v in dict(ready.get("missing", {})).items()}
        refused = layers.refusal(self.missing)
        if refused:
            self.close()
            raise layers.SandboxUnavailable(refused)
        # Reported before any generated code ran: where scratch is no tmpfs, it is walked.
        watch.start(scratch_is_tmpfs=SCRATCH_TMPFS not in self.missing)

    def describe(self) -> str:
        """The layers as one line for logs: those applied and those missing, with why."""
        return layers.describe(self.applied, self.missing)

    def _stderr_tail(self) -> str:
        """The last non-empty line the sandbox wrote to stderr (cut to 300 characters)."""
        # A moment for the drain to reach the end of the pipe: what a dying process wrote last.
        text = self._stderr.tail(wait_s=STDERR_WAIT_S).decode(errors="replace")
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    def _died(self, what: str) -> CodeFault:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        code = self.proc.returncode
        how = (
            "was killed"
            if code is None
            else (f"was killed by signal {-code}" if code < 0 else f"exited with status {code}")
        )
        limit = self._watch.limit_reached(code) if self._watch is not None else None
        if limit:
            # Ended by a limit (the watchdog's, or the kernel's): that, not a signal number.
            return CodeFault(f"the sandbox exceeded its {limit} while {what}")
        tail = self._stderr_tail()
        return CodeFault(f"the sandbox {how} while {what}" + (f": {tail}" if tail else ""))

    def _read(self, timeout_s: float, what: str) -> tuple[dict[str, Any], bytes]:
        try:
            return self._reader.read(timeout_s)
        except TimeoutError:
            where = self._where_now()
            self.proc.kill()
            at = f" (at {where})" if where else ""
            raise CodeFault(f"{what} took longer than {timeout_s:.0f} s{at}", where) from None
        except wire.WireError as exc:
            if "closed" in str(exc):
                raise self._died(what) from None
            self.proc.kill()
            raise CodeFault(f"the sandbox answered out of format while {what}: {exc}") from None

    def _where_now(self) -> str:
        """The line of generated code the sandbox is running, asked with a signal (its last
        answer); "" when it does not say within WHERE_WAIT_S."""
        try:
            self.proc.send_signal(wire.WHERE_SIGNAL)
            answer, _ = self._reader.read(WHERE_WAIT_S)
        except (OSError, TimeoutError, wire.WireError):
            return ""
        return one_line(str(answer.get("error", "")), 120)

    def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout_s: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        """One operation; its answer, or CodeFault with the sandbox's one-line error."""
        what = str(header.get("op"))
        timeout = timeout_s or self.call_timeout_s
        # The call's time starts with the request: the sandbox reads and decodes it while it is
        # written (a rollout of Humanoid rows is some 25 MB), which is work for the call, not
        # CPU time outside it; the frame reader ends the call with the answer.
        if self._watch is not None:
            self._watch.call_started()
        try:
            wire.write_all(self._stdin_fd, wire.encode(header, payload), _deadline(timeout))
        except TimeoutError:
            self._call_over()
            self.proc.kill()
            raise CodeFault(f"the sandbox stopped reading while {what} ({timeout:.0f} s)") from None
        except OSError:
            self._call_over()
            raise self._died(what) from None
        answer, body = self._read(timeout, what)
        if "error" in answer:
            raise CodeFault(one_line(str(answer["error"])))
        return answer, body

    def _call_over(self) -> None:
        if self._watch is not None:
            self._watch.call_ended()

    def close(self) -> None:
        """End the sandbox process (killed if it is not gone in 2 s) and remove its scratch;
        never raises (what stays is logged in one line)."""
        if self._watch is not None:
            self._watch.stop()
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        # The process is gone: the drain reads to EOF and closes its end.
        self._stderr.finish(STDERR_WAIT_S)
        # Without recursion, links never followed: the code may have left any tree there.
        left = scrub.remove_tree(self.scratch)
        if left:
            log.warning("sandbox scratch not removed: %s", left)

    def __enter__(self) -> SandboxClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


# A batch of rollout rows is about 1.4 MB: through a default 64 KB pipe that is some twenty
# write-wake-read rounds between the processes, a tenth of a custom reward's cost per step.
PIPE_BYTES = 1 << 20


def _widen(*fds: int) -> None:
    """Pipes of PIPE_BYTES where the kernel allows it (a speed-up only: kept as they are
    when it refuses, e.g. above /proc/sys/fs/pipe-max-size for an unprivileged user)."""
    for fd in fds:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _deadline(timeout_s: float) -> float:
    return time.monotonic() + timeout_s


def probe() -> tuple[list[str], dict[str, str]]:
    """The layers this platform gives the sandbox: (applied, {missing: why}); a worker logs
    them at start. Never raises for a missing layer."""
    prior = os.environ.get(layers.ALLOW_MISSING_VAR)
    os.environ[layers.ALLOW_MISSING_VAR] = ",".join(layers.REQUIRED)  # report, do not refuse
    try:
        box = SandboxClient(probe=True)
    except layers.SandboxUnavailable as exc:
        return [], {"sandbox": str(exc)}
    finally:
        if prior is None:
            os.environ.pop(layers.ALLOW_MISSING_VAR, None)
        else:
            os.environ[layers.ALLOW_MISSING_VAR] = prior
    box.close()
    return box.applied, box.missing
