"""The trusted side of the sandbox: starts the sandbox process, checks its layers, and talks
to it in frames (see `wire.py`).

Everything that comes back is parsed as JSON or float64 arrays and checked here; a process that
dies, hangs or answers out of format is the generated code's fault, reported in one line.

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
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from activities.behaviours.layout import reads_sensors
from activities.sandbox import layers, scrub, watchdog, wire
from activities.sandbox.errors import one_line
from activities.sandbox.judge_code import JudgeLoadError, check_judgment, judge_budget_s
from activities.sandbox.limits import SCRATCH_TMPFS
from activities.sandbox.reward_code import LARGE, MAX_TERM_NAME, MAX_TERMS, RewardLoadError
from workflows.contracts.shown import shown

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120.0  # numpy import and the layers; slow only on a loaded machine
LOAD_TIMEOUT_S = 30.0
# The longest one scoring call may read for, whatever its rows: shorter than the trainer's
# stall limit (activities/training/activities.py TRAIN_STALL_S, 300 s), so that a reward slow
# enough to stall training ends here, as the reward's fault with its reason, and goes to the
# fixer; the stall limit then only catches what is not generated code (issue 42).
SCORE_READ_MAX_S = 240.0
# The module body runs once per instance (one per env): all its runs together get this long.
MODULE_BUDGET_S = 60.0
STDERR_TAIL_BYTES = 4000
WHERE_WAIT_S = 2.0  # for a sandbox asked where it is to answer
STDERR_WAIT_S = 1.0  # for the stderr drain to reach EOF once the sandbox has exited
_STDERR_CHUNK = 1 << 16

Transition = tuple[int, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]


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


def _is_number(value: Any) -> bool:
    return isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating)


def _layout(info: dict[str, Any]) -> list[tuple[str, int]]:
    """The info fields a reward sees, as (name, width); 0 means a scalar."""
    out: list[tuple[str, int]] = []
    for key, value in info.items():
        if key.startswith("_") or not isinstance(key, str):
            continue
        if _is_number(value):
            out.append((key, 0))
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.size:
            out.append((key, int(value.size)))
    return out


class SandboxRewards:
    """The session's reward, run in the sandbox: one instance per env, scored in batches.

    The trusted side of `LoadedReward`: latex, terms, per-instance state over there, and the
    counts of repaired (non-finite, clipped) rewards at the end.
    """

    # Its calls wait on the sandbox process: the engine may make them from a scoring thread
    # while its own thread steps the physics (one call at a time, in order).
    scores_beside = True

    def __init__(
        self,
        box: SandboxClient,
        source: str,
        filename: str,
        *,
        strict: bool = True,
        python_layers: bool = True,
    ) -> None:
        self.box = box
        self.filename = filename
        self.reads_sensors = reads_sensors(source)
        header = {
            "op": "load_reward",
            "source": source,
            "filename": filename,
            "strict": strict,
            "python_layers": python_layers,
        }
        started = time.monotonic()
        answer = self._call(header, timeout_s=LOAD_TIMEOUT_S)[0]
        self._module_s = time.monotonic() - started  # the module's runs so far, in seconds
        with self._reading("loading"):
            self.latex = _text(answer.get("latex", ""), "latex", 2000)
            self.terms = _names(answer.get("terms", []))
            # The module's SHAPING as the sandbox returned it: data only, checked by the
            # trainer (activities/training/batched/shaping.py) before anything applies it.
            self.shaping: Any = answer.get("shaping")
            self._spare: int | None = _count(answer, "id")  # the instance the load made
        # Every term name this run was sent: at most MAX_TERMS over the run, not per call.
        self._seen: set[str] = set(self.terms)
        self._layouts: dict[tuple[str, ...], tuple[list[str], list[list[Any]] | None]] = {}
        self._budget_s = _call_budget()

    def _call(
        self, header: dict[str, Any], payload: bytes = b"", timeout_s: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        try:
            return self.box.call(header, payload, timeout_s=timeout_s)
        except CodeFault as exc:
            raise RewardLoadError(str(exc)) from None

    @contextlib.contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        """Any failure while reading or using an answer is the reward's (its sandbox answered
        it), one line for the fixer; never an error of the trainer's."""
        try:
            yield
        except RewardLoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the answer made fail
            raise RewardLoadError(
                f"{self.filename}: the reward's sandbox answered out of format while {what} "
                f"({type(exc).__name__}: {one_line(str(exc), 120)})"
            ) from None

    def _count_names(self, names: Iterable[str]) -> None:
        """RewardLoadError once the run has been sent more than MAX_TERMS distinct names."""
        new = set(names) - self._seen
        if not new:
            return
        for name in sorted(new):
            _plain(name, self.filename)
        if len(self._seen) + len(new) > MAX_TERMS:
            raise RewardLoadError(
                f"{self.filename}: the reward returned more than {MAX_TERMS} distinct term names "
                f"over the run (a new one: {sorted(new)[0]!r}); return the same named terms on "
                "every call"
            )
        self._seen |= new

    def new_instance(self) -> int:
        """A fresh instance (the module run again): stateful rewards never share state."""
        if self._spare is not None:
            rid, self._spare = self._spare, None
            return rid
        over = RewardLoadError(
            f"{self.filename}: running the module for each env took over "
            f"{MODULE_BUDGET_S:g} s in all; keep its top level to definitions"
        )
        left = MODULE_BUDGET_S - self._module_s
        if left <= 0:
            raise over
        started = time.monotonic()
        try:
            answer = self._call({"op": "instance"}, timeout_s=min(LOAD_TIMEOUT_S, left))[0]
        except RewardLoadError:
            if time.monotonic() - started >= left:
                raise over from None
            raise
        self._module_s += time.monotonic() - started
        with self._reading("making an instance"):
            return _count(answer, "id")

    def drop(self, rid: int) -> None:
        """Forget an instance (its env closed); a dead sandbox is not an error here."""
        with contextlib.suppress(RewardLoadError):
            self._call({"op": "drop", "id": rid})

    def counts(self) -> dict[str, int]:
        """Calls, and non-finite or clipped rewards repaired so far, over every instance."""
        answer = self._call({"op": "counts"})[0]
        with self._reading("counting its calls"):
            return {k: _count(answer, k) for k in ("calls", "nonfinite", "clipped")}

    def _layout_of(self, info: dict[str, Any]) -> tuple[list[str], list[list[Any]] | None]:
        """(field names, wire layout) for this info's keys; cached per key set, and None for
        the layout until the first batch fixes the array widths."""
        key = tuple(info)
        cached = self._layouts.get(key)
        if cached is None:
            cached = ([n for n, _ in _layout(info)], None)
            self._layouts[key] = cached
        return cached

    def score(self, batch: Sequence[Transition]) -> list[tuple[float, dict[str, float]]]:
        """(total, terms) per transition, in order; RewardLoadError blames the reward."""
        info0 = batch[0][4]
        names, wire_layout = self._layout_of(info0)
        if any(tuple(t[4]) != tuple(info0) for t in batch[1:]):
            # Fields differ within the batch (rare): score one at a time.
            return [r for t in batch for r in self.score([t])]
        columns = [
            np.asarray([t[1] for t in batch], dtype=np.float64),
            np.asarray([t[2] for t in batch], dtype=np.float64).reshape(len(batch), -1),
            np.asarray([t[3] for t in batch], dtype=np.float64),
        ]
        columns += [
            np.asarray([t[4][name] for t in batch], dtype=np.float64).reshape(len(batch), -1)
            for name in names
        ]
        if wire_layout is None:
            scalar = {n for n, w in _layout(info0) if w == 0}
            wire_layout = [
                [name, 0 if name in scalar else col.shape[1]]
                for name, col in zip(["obs", "action", "next_obs", *names], columns, strict=True)
            ]
            self._layouts[tuple(info0)] = (names, wire_layout)
        data = np.concatenate(columns, axis=1)
        ids = [t[0] for t in batch]
        starts = [bool(t[4].get("_episode_start", False)) for t in batch]
        answer, body = self._score_packed(ids, starts, wire_layout, data)
        with self._reading("scoring"):
            scored = _decode_scores(answer, body, len(batch), frozenset(self._seen))
            self._count_names(name for _, terms in scored for name in terms)
        return scored

    def score_columns(
        self,
        ids: Sequence[int],
        starts: np.ndarray,
        obs: np.ndarray,
        action: np.ndarray,
        next_obs: np.ndarray,
        info: dict[str, np.ndarray],
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Score n transitions given as columns (row i: instance ids[i]; info fields as (n,)
        for a scalar or (n, w) arrays): the totals and each term, as arrays of n."""
        n = len(ids)
        named = [("obs", obs), ("action", action), ("next_obs", next_obs), *info.items()]
        layout = [
            [
                name,
                0
                if name not in ("obs", "action", "next_obs") and col.ndim == 1
                else int(np.prod(col.shape[1:])),
            ]
            for name, col in named
        ]
        data = np.concatenate(
            [np.asarray(c, dtype=np.float64).reshape(n, -1) for _, c in named], axis=1
        )
        answer, body = self._score_packed(
            list(map(int, ids)), [bool(x) for x in starts], layout, data
        )
        with self._reading("scoring"):
            totals, terms = _decode_columns(answer, body, n, frozenset(self._seen))
            self._count_names(terms)
        return totals, terms

    def _score_packed(
        self, ids: list[int], starts: list[bool], layout: list[list[Any]], data: np.ndarray
    ) -> tuple[dict[str, Any], bytes]:
        header = {"op": "score", "ids": ids, "start": starts, "layout": layout}
        # A whole batch may take the per-call budget for each transition, up to the cap.
        timeout = max(self.box.call_timeout_s, 2.0 + 1.5 * len(ids) * self._budget_s)
        timeout = min(timeout, SCORE_READ_MAX_S)
        started = time.monotonic()
        try:
            return self.box.call(header, data.tobytes(), timeout_s=timeout)
        except CodeFault as exc:
            took = time.monotonic() - started
            if took < timeout:
                raise RewardLoadError(str(exc)) from None
            at = f" (it was at {exc.where})" if exc.where else ""
            raise RewardLoadError(
                f"{self.filename}: scoring {len(ids):,} steps took over {timeout:.0f} s "
                f"({1000 * took / len(ids):.0f} ms a step or more){at}, long enough to stall "
                "training; keep compute() to a few milliseconds a call"
            ) from None


def _call_budget() -> float:
    from activities.sandbox.guards import call_budget_s

    return call_budget_s()


def _names(raw: Any) -> list[str]:
    if not isinstance(raw, list) or len(raw) > MAX_TERMS:
        raise RewardLoadError("the reward's sandbox answered with a malformed list of terms")
    if not all(isinstance(n, str) and len(n) <= MAX_TERM_NAME for n in raw):
        raise RewardLoadError("the reward's sandbox answered with malformed term names")
    for name in raw:
        _plain(name, "the reward")
    return raw


def _plain(name: str, filename: str) -> None:
    """RewardLoadError for a term name that would print as something other than it holds (a
    lone surrogate breaks the files it is written to; an invisible character makes two names
    look alike): names are checked once, where they cross from the sandbox."""
    if not name or shown(name) != name:
        raise RewardLoadError(
            f"{filename}: the term name {shown(name, 60)!r} is empty or holds characters that "
            "print as something else (controls, surrogates, invisible marks); use plain text"
        )


def _count(answer: dict[str, Any], key: str) -> int:
    """A count or id from an answer: a non-negative integer (JSON int, not bool), else a
    ValueError naming the field."""
    if key not in answer:
        raise ValueError(f"{key!r} is missing")
    value = answer[key]
    if type(value) is not int or not 0 <= value < 1 << 53:
        raise ValueError(f"{key!r} must be a non-negative integer, got {type(value).__name__}")
    return value


def _text(value: Any, key: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be text, got {type(value).__name__}")
    return value[:limit]


def _decode_scores(
    answer: dict[str, Any], body: bytes, n: int, seen: frozenset[str] = frozenset()
) -> list[tuple[float, dict[str, float]]]:
    """Each row's total and terms; RewardLoadError for anything out of format, and, while the
    rows are read and before anything is built from them, once the names the run has seen and
    these rows name pass MAX_TERMS (one array per distinct name would come next)."""
    if len(body) % 8:
        raise RewardLoadError("the reward's sandbox answered with a malformed payload")
    values = np.frombuffer(body, dtype=np.float64)
    if not np.isfinite(values).all() or (np.abs(values) > LARGE * (1 + 1e-9)).any():
        raise RewardLoadError("the reward's sandbox answered with non-finite or huge numbers")
    if "names" in answer:
        names = _names(answer["names"])
        if values.size != n * (1 + len(names)):
            raise RewardLoadError("the reward's sandbox answered with the wrong number of values")
        rows = values.reshape(n, 1 + len(names)).tolist()
        return [(row[0], dict(zip(names, row[1:], strict=True))) for row in rows]
    per_row = answer.get("rows")
    if not isinstance(per_row, list) or len(per_row) != n:
        raise RewardLoadError("the reward's sandbox answered with the wrong number of rows")
    out: list[tuple[float, dict[str, float]]] = []
    flat = values.tolist()
    pos = 0
    named = set(seen)
    for raw in per_row:
        names = _names(raw)
        named.update(names)
        if len(named) > MAX_TERMS:
            raise RewardLoadError(
                f"the reward returned more than {MAX_TERMS} distinct term names over the run; "
                "return the same named terms on every call"
            )
        if pos + 1 + len(names) > len(flat):
            raise RewardLoadError("the reward's sandbox answered with too few values")
        out.append((flat[pos], dict(zip(names, flat[pos + 1 : pos + 1 + len(names)], strict=True))))
        pos += 1 + len(names)
    if pos != len(flat) or not all(math.isfinite(x) for x in flat):
        raise RewardLoadError("the reward's sandbox answered with too many values")
    return out


def _decode_columns(
    answer: dict[str, Any], body: bytes, n: int, seen: frozenset[str] = frozenset()
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`_decode_scores` as arrays: totals (n,), and each term (n,), 0 where a row lacks it."""
    if "names" in answer:
        names = _names(answer["names"])
        values = np.frombuffer(body, dtype=np.float64) if len(body) % 8 == 0 else None
        if values is None or values.size != n * (1 + len(names)):
            raise RewardLoadError("the reward's sandbox answered with the wrong number of values")
        if not np.isfinite(values).all() or (np.abs(values) > LARGE * (1 + 1e-9)).any():
            raise RewardLoadError("the reward's sandbox answered with non-finite or huge numbers")
        table = values.reshape(n, 1 + len(names))
        return table[:, 0].copy(), {name: table[:, j + 1].copy() for j, name in enumerate(names)}
    scored = _decode_scores(answer, body, n, seen)
    totals = np.array([t for t, _ in scored], dtype=np.float64)
    terms: dict[str, np.ndarray] = {}
    for i, (_, row) in enumerate(scored):
        for name, value in row.items():
            terms.setdefault(name, np.zeros(n))[i] = value
    return totals, terms


def judge_all(
    box: SandboxClient,
    source: str,
    filename: str,
    trajectories: Sequence[dict[str, np.ndarray]],
    criteria: list[str],
    *,
    python_layers: bool = True,
) -> list[dict[str, Any]]:
    """Each trajectory judged in the sandbox, each answer checked again here (the sandbox's
    word is never taken for the format); JudgeLoadError blames the judge code in one line."""
    try:
        raw = judge_in_sandbox(
            box,
            source,
            filename,
            trajectories,
            criteria,
            python_layers=python_layers,
            timeout_s=judge_budget_s() + 30,
        )
    except CodeFault as exc:
        raise JudgeLoadError(str(exc)) from None
    try:
        return [check_judgment(r, criteria) for r in raw]
    except JudgeLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the answer made fail is the judge's
        raise JudgeLoadError(
            f"{filename}: the judge's sandbox answered out of format "
            f"({type(exc).__name__}: {one_line(str(exc), 120)})"
        ) from None


def judge_in_sandbox(
    box: SandboxClient,
    source: str,
    filename: str,
    trajectories: Sequence[dict[str, np.ndarray]],
    criteria: list[str],
    *,
    python_layers: bool = True,
    timeout_s: float = 90.0,
) -> list[dict[str, Any]]:
    """The judge's raw answers for each trajectory, unchecked (`judge_all` checks them);
    CodeFault when the judge code fails."""
    load = {"op": "load_judge", "source": source, "filename": filename}
    box.call({**load, "python_layers": python_layers}, timeout_s=LOAD_TIMEOUT_S)
    out = []
    for trajectory in trajectories:
        arrays, chunks = [], []
        for name, arr in trajectory.items():
            # A scalar (meta_dt) stays 0-d: ascontiguousarray would make it (1,), which
            # float() refuses in numpy 2.
            arr = np.asarray(arr)
            arr = np.ascontiguousarray(arr) if arr.ndim else arr
            if arr.dtype.kind not in "biufU":
                continue
            arrays.append([name, arr.dtype.str, list(arr.shape)])
            chunks.append(arr.tobytes())
        header = {"op": "judge", "arrays": arrays, "criteria": criteria}
        answer, _ = box.call(header, b"".join(chunks), timeout_s=timeout_s)
        judgment = answer.get("judgment")
        if not isinstance(judgment, dict):
            raise CodeFault("the judge's sandbox answered without a judgment")
        out.append(judgment)
    return out
