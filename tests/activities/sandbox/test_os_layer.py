"""The sandbox's OS layers against hostile generated code, with and without the Python layers.

Each case of `hostile_os.CASES` runs through the real supervisor (`run_child`) twice: once as a
session runs it (static check and restricted builtins in front), once with `python_layers=False`
(plain exec, real builtins), where the OS layers alone must hold. Around each run the test sets
canaries: secrets in its environment and in a worker's, files holding secrets next to the run's
output folder, files in the output folder, listeners (TCP, UDP, unix, abstract unix), a worker
process as root and one as the sandbox's own uid. Whatever the code does, afterwards:

  - no canary and no escape marker appears in the error, the result, the progress events, any
    file under the test's folder, nor in any place the code could write;
  - nothing exists outside scratch where the code tried to write; the files it tried to alter
    are byte-identical; nothing new appeared in the output folder but the runner's own files;
  - the test process got no signal, both workers live, the listeners accepted nothing;
  - no process started by the run remains; the run took less than 60 s;
  - the runner survived and blamed the generated code (or the run succeeded).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from activities.judging import job as judging_job
from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.sandbox import layers
from activities.training import job as training_job
from tests.activities.sandbox.hostile_os import CANARY_PREFIX, CASES, ESCAPE_MARKER, Case, source

REPO_ROOT = Path(__file__).resolve().parents[3]
ENV_ID = "HalfCheetah-v5"
CASE_LIMIT_S = 60.0
NOBODY = 65534
ALL_LAYERS = [
    "clean-env",
    "rlimits",
    "identity",
    "netns",
    "landlock-fs",
    "landlock-net",
    "landlock-scope",
    "seccomp",
]
# What the sandbox's environment may hold (activities/sandbox/confine.py), besides its own
# POLICYFORGE_SANDBOX_* settings.
SANDBOX_ENV = {
    "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONWARNINGS", "HOME",
    "TMPDIR", "LANG", "LC_ALL", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
    "POLICYFORGE_PARENT_PID", "LD_LIBRARY_PATH",
}  # fmt: skip
SECRET_VARS = ("ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "PF_OS_TEST_MARKER")
# Pre-created in the output folder; the code tries to overwrite them (the runner does not, but
# in training it writes the first three itself).
OUT_FILES = ["summary.json", "model.zip", "vecnormalize.npz", "vecnormalize.pkl", "keep.txt"]
TRAINER_WRITES = {"summary.json", "model.zip", "vecnormalize.npz"}

JOBS = {"judge": judging_job.JUDGE, "train": training_job.TRAIN, "validate": training_job.VALIDATE}

BENIGN = (
    "def reward_fn(obs, action, next_obs, info):\n"
    "    v = float(info['x_velocity'])\n"
    "    return v, {'forward': v}\n"
)


def canary() -> str:
    return CANARY_PREFIX + secrets.token_hex(10)


class Listeners:
    """TCP, UDP, unix and abstract unix listeners on this machine; every hit is recorded."""

    def __init__(self, folder: Path) -> None:
        self.hits: list[str] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(20):  # a free port for both TCP and UDP
            self.tcp.bind(("127.0.0.1", 0))
            self.port = self.tcp.getsockname()[1]
            try:
                self.udp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.tcp.close()
                self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        else:
            raise RuntimeError("no port free for both TCP and UDP")
        self.tcp.listen(16)
        folder.mkdir(mode=0o777)
        folder.chmod(0o777)  # the sandbox's uid could reach it: only the layers stand between
        self.unix_path = folder / "listener.sock"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(str(self.unix_path))
        self.unix_path.chmod(0o777)
        self.unix.listen(16)
        self.abstract_name = f"pf-test-{uuid.uuid4().hex}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(16)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        names = {self.tcp: "tcp", self.unix: "unix", self.abstract: "abstract", self.udp: "udp"}
        while not self._stop.is_set():
            ready, _, _ = select.select(list(names), [], [], 0.1)
            for sock in ready:
                if sock is self.udp:
                    data, _ = sock.recvfrom(65536)
                    self.hits.append(f"udp: {data[:200]!r}")
                else:
                    conn, _ = sock.accept()
                    self.hits.append(f"{names[sock]}: accepted a connection")
                    conn.settimeout(0.5)
                    with contextlib.suppress(OSError):
                        self.hits.append(f"{names[sock]}: {conn.recv(200)!r}")
                    conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in (self.tcp, self.udp, self.unix, self.abstract):
            sock.close()


@dataclass
class Arena:
    base: Path
    out: Path
    tag: str
    canaries: dict[str, str]
    ctx: dict[str, Any]
    protected: dict[Path, tuple[bytes, int, int, int]]  # files the code tries to alter
    secret_files: set[Path]
    outside: list[Path]  # where an escape would leave a file
    workers: list[subprocess.Popen]
    listeners: Listeners
    signals: list[int] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


def _worker(env: dict[str, str], as_nobody: bool) -> subprocess.Popen:
    extra: dict[str, Any] = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    return subprocess.Popen(
        ["sleep", "600"],
        env=env,
        cwd="/",
        start_new_session=True,  # its own group: killpg on it reaches nothing else
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **(extra if as_nobody else {}),
    )


@pytest.fixture
def arena(monkeypatch: pytest.MonkeyPatch) -> Iterator[Arena]:
    base = Path(tempfile.mkdtemp(prefix="pf-os-"))
    base.chmod(0o755)  # readable by the sandbox's uid: the layers must stop it, not the mode
    tag = uuid.uuid4().hex
    canaries = {name: canary() for name in SECRET_VARS}
    canaries |= {k: canary() for k in ("credentials", "dotenv", "other_session", "uid_owned")}
    for name in SECRET_VARS:
        monkeypatch.setenv(name, canaries[name])
    # Credentials where a session's home would hold them, another session's artifacts next to
    # this run's output folder, a project folder with a .env.
    home = base / "home"
    credentials = home / ".aws" / "credentials"
    dotenv = base / "project" / ".env"
    other = base / "sessions" / "other_session" / "iter_1" / "summary.json"
    out = base / "sessions" / "this_session" / "iter_1" / "cand_cfg_seed_0"
    # A file of the sandbox's own uid outside its scratch (another sandbox's, or with a user
    # namespace the worker's own files): only the layers keep the code off it.
    uid_owned = base / "victims" / "sandbox_uid_owned.txt"
    files = {
        credentials: f"[default]\naws_secret_access_key = {canaries['credentials']}\n",
        dotenv: f"ANTHROPIC_API_KEY={canaries['dotenv']}\n",
        other: json.dumps({"secret": canaries["other_session"]}),
        uid_owned: f"scratch of another run: {canaries['uid_owned']}\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_text(text)
        path.chmod(0o644)
    if os.geteuid() == 0:
        os.chown(uid_owned, NOBODY, NOBODY)
        uid_owned.chmod(0o600)
    for folder in (home, home / ".aws", base / "project", base / "victims", *other.parents):
        if folder.is_relative_to(base):
            folder.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    out.mkdir(parents=True)
    out.chmod(0o777)
    for folder in out.parents:
        if folder.is_relative_to(base) and folder != base:
            folder.chmod(0o755)
    protected = dict.fromkeys(files)
    for name in OUT_FILES:
        (out / name).write_bytes(os.urandom(64))
        (out / name).chmod(0o666)
        protected[out / name] = None
    protected = {p: _state(p) for p in protected}
    escape = base / "escape"
    escape.mkdir()
    escape.chmod(0o777)
    uid = uuid.uuid4().hex[:12]
    outside = [
        escape / "leak.txt",
        Path(tempfile.gettempdir()) / f"pf-escape-{uid}.txt",
        Path("/var/tmp") / f"pf-escape-{uid}.txt",
        Path("/dev/shm") / f"pf-escape-{uid}.txt",
    ]
    rel_name = f"pf-escape-{uid}-rel.txt"
    trajectory = base / "traj" / "episode.npz"
    trajectory.parent.mkdir(mode=0o755)
    rng = np.random.default_rng(0)
    np.savez(
        trajectory,
        obs=rng.normal(size=(20, 17)),
        action=rng.normal(size=(20, 6)),
        qpos=rng.normal(size=(20, 9)),
        qvel=rng.normal(size=(20, 9)),
        reward=rng.normal(size=20),
        info_x_velocity=rng.normal(size=20),
    )
    listeners = Listeners(base / "sock")
    worker_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    worker_env |= {name: canaries[name] for name in SECRET_VARS}
    workers = [_worker(worker_env, as_nobody=False)]
    if os.geteuid() == 0:
        workers.append(_worker(worker_env, as_nobody=True))
    ctx: dict[str, Any] = {
        "tag": tag,
        "base": str(base),
        "out": str(out),
        "out_files": OUT_FILES,
        "test_pid": os.getpid(),
        "worker_pid": workers[0].pid,
        "nobody_pid": workers[1].pid if len(workers) > 1 else 0,
        "escape_paths": [str(p) for p in outside],
        "escape_dir": str(escape),
        "child_path": str(escape / "child.txt"),
        "sh_path": str(escape / "sh.txt"),
        "rel_name": rel_name,
        "other_session": str(other),
        "credentials": str(credentials),
        "uid_owned": str(uid_owned),
        "dotenv": str(dotenv),
        "readme": str(REPO_ROOT / "README.md"),
        "repo": str(REPO_ROOT),
        "trajectory": str(trajectory),
        "tcp_ports": [7233, 8333, listeners.port],
        "udp_port": listeners.port,
        "unix_path": str(listeners.unix_path),
        "abstract": listeners.abstract_name,
    }
    outside += [
        escape / "child.txt",
        escape / "sh.txt",
        escape / "rel.txt",
        escape / "newdir",
        escape / "renamed.txt",
        escape / "via-link.txt",
        Path(tempfile.gettempdir()) / rel_name,
    ]
    # Marks every process the run starts (runner, sandbox, anything they could fork): the
    # sandbox's own settings reach it on purpose, so this variable does.
    monkeypatch.setenv("POLICYFORGE_SANDBOX_TEST_RUN_TAG", tag)
    # Room for the attempts in the first call (connects, reads): the budget is not under test.
    monkeypatch.setenv("POLICYFORGE_SANDBOX_CALL_S", "20")
    a = Arena(
        base=base,
        out=out,
        tag=tag,
        canaries=canaries,
        ctx=ctx,
        protected=protected,
        secret_files=set(files),
        outside=outside,
        workers=workers,
        listeners=listeners,
    )
    previous = signal.signal(signal.SIGUSR1, lambda signum, _frame: a.signals.append(signum))
    try:
        yield a
    finally:
        signal.signal(signal.SIGUSR1, previous)
        listeners.close()
        for w in workers:
            if w.poll() is None:
                w.kill()
            w.wait()
        for p in outside:
            if (
                p.is_relative_to("/tmp")
                or p.is_relative_to("/var/tmp")
                or p.is_relative_to("/dev/shm")
            ):
                with contextlib.suppress(OSError):
                    p.unlink()
        shutil.rmtree(base, ignore_errors=True)


def _state(path: Path) -> tuple[bytes, int, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mode, st.st_mtime_ns, st.st_uid


def tagged_processes(tag: str) -> dict[int, str]:
    """Processes whose environment or command line holds the tag: {pid: command line}."""
    found: dict[int, str] = {}
    needle = tag.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in cmdline or needle in environ:
            found[int(entry)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:200]
    return found


def strays(tag: str, wait_s: float = 5.0) -> dict[int, str]:
    """What the run left behind once its sandbox has had time to go (then killed here)."""
    deadline = time.monotonic() + wait_s
    while True:
        left = tagged_processes(tag)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in left:  # processes this test's run started: end them by id
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


def request(case_mode: str, src: str, arena: Arena, python_layers: bool) -> ChildRequest:
    if case_mode == "judge":
        return ChildRequest(
            env_id=ENV_ID,
            judge_source=src,
            trajectory_path=arena.ctx["trajectory"],
            criteria=[],
            python_layers=python_layers,
        )
    if case_mode == "train":
        return ChildRequest(
            env_id=ENV_ID,
            reward_source=src,
            timesteps=2048,
            progress_interval_s=0.5,
            python_layers=python_layers,
        )
    return ChildRequest(env_id=ENV_ID, reward_source=src, steps=8, python_layers=python_layers)


async def run(mode: str, req: ChildRequest, out: Path, events: list[dict[str, Any]]):
    """(result or None, ChildFailed or None, seconds)."""
    started = time.monotonic()
    result: dict[str, Any] | None = None
    failed: ChildFailed | None = None
    try:
        result = await run_child(JOBS[mode], req, out, events.append, timeout_s=CASE_LIMIT_S + 30)
    except ChildFailed as exc:
        failed = exc
    return result, failed, time.monotonic() - started


def _files_under(folder: Path) -> Iterator[Path]:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            yield path


def check_contained(
    arena: Arena,
    mode: str,
    result: dict[str, Any] | None,
    failed: ChildFailed | None,
    seconds: float,
) -> None:
    """Every assertion that holds after any hostile run; messages say what escaped."""
    problems: list[str] = []
    outputs = {
        "error message": failed.message if failed else "",
        "result": json.dumps(result) if result else "",
        "progress events": json.dumps(arena.events),
    }
    for path in _files_under(arena.base):
        if path not in arena.secret_files and path.name != "episode.npz":
            outputs[str(path)] = path.read_bytes().decode("latin-1")
    for where, text in outputs.items():
        for name, value in arena.canaries.items():
            if value in text:
                problems.append(f"canary {name} leaked into {where}")
        if ESCAPE_MARKER in text:
            at = text.index(ESCAPE_MARKER)
            problems.append(f"escape marker in {where}: {text[max(at - 40, 0) : at + 160]!r}")
    for path in arena.outside:
        if os.path.lexists(path):
            problems.append(f"a file appeared outside scratch: {path}")
    trainer = TRAINER_WRITES if mode == "train" else set()
    for path, before in arena.protected.items():
        if path.parent == arena.out and path.name in trainer:
            continue
        if not path.exists():
            problems.append(f"{path} was removed")
        elif _state(path) != before:
            problems.append(
                f"{path} was altered: (bytes, mode, mtime, uid) {before[1:]} -> "
                f"{_state(path)[1:]}{' and its content' if _state(path)[0] != before[0] else ''}"
            )
    if mode != "train":
        expected = {*OUT_FILES, f"request_{mode}.json", "result.json"}
        extra = {p.name for p in arena.out.iterdir()} - expected
        if extra:
            problems.append(f"new files in the output folder: {sorted(extra)}")
    if arena.signals:
        problems.append(f"the test process received signals {arena.signals}")
    for who, w in zip(("root worker", "nobody worker"), arena.workers, strict=False):
        if w.poll() is not None:
            problems.append(f"the {who} (pid {w.pid}) died: status {w.returncode}")
    if arena.listeners.hits:
        problems.append(f"listeners were reached: {arena.listeners.hits}")
    left = strays(arena.tag)
    if left:
        problems.append(f"processes left behind: {left}")
    for event in arena.events:
        if event.get("timesteps") == 999999999:
            problems.append(f"a forged progress event reached the supervisor: {event}")
        if event.get("event") == "done" and event.get("mode") != mode:
            problems.append(f"a forged done event reached the supervisor: {event}")
    if failed is not None:
        if not failed.reward_fault:
            problems.append(f"the runner did not survive to blame the code: {failed.message}")
        if "\n" in failed.message or len(failed.message) > 600:
            problems.append(f"the error is not one line: {failed.message!r}")
    if seconds >= CASE_LIMIT_S:
        problems.append(f"the case took {seconds:.0f} s")
    assert not problems, "\n".join(problems)


def _outcome(result: dict[str, Any]) -> Any:
    """What generated code reported back in a successful run (its term names or judgment)."""
    if "judgment" in result:
        return result["judgment"]
    return sorted(result.get("term_magnitudes") or result.get("term_means") or {})


@pytest.mark.parametrize("python_layers", [True, False], ids=["python-layers", "os-only"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_hostile_code_is_contained_by_the_os_layers(
    case: Case, python_layers: bool, arena: Arena
) -> None:
    req = request(case.mode, source(case, arena.ctx), arena, python_layers)
    result, failed, seconds = await run(case.mode, req, arena.out, arena.events)
    # Shown with -s or on failure: what the code managed and what it was refused.
    print(f"{case.id} python_layers={python_layers} {seconds:.1f}s:", end=" ")
    print(failed.message if failed else _outcome(result or {}))
    check_contained(arena, case.mode, result, failed, seconds)
    if python_layers:
        # The static check stops every case before it runs.
        assert failed is not None and failed.reward_fault, result
        return
    if case.id == "trainer_objects":
        # The trainer's objects are in another process: training ran to its end.
        assert result is not None and result["ok"], failed and failed.message
        assert result["timesteps_done"] >= 2048
    if case.id == "own_environ":
        assert result is not None, failed and failed.message
        names = {t[4:] for t in result["term_magnitudes"] if t.startswith("env:")}
        assert names, result["term_magnitudes"]
        unexpected = {n for n in names if n not in SANDBOX_ENV}
        unexpected = {n for n in unexpected if not n.startswith("POLICYFORGE_SANDBOX_")}
        assert not unexpected, f"the parent's variables reached the sandbox: {unexpected}"
    if case.id in ("memory_views", "print_then_die", "stderr_symlink"):
        assert failed is not None and "sandbox" in failed.message, result


async def test_a_benign_run_lists_every_layer(tmp_path: Path) -> None:
    req = ChildRequest(env_id=ENV_ID, reward_source=BENIGN, steps=8)
    result = await run_child(training_job.VALIDATE, req, tmp_path, timeout_s=120)
    assert result["ok"]
    assert sorted(result["sandbox"]) == sorted(ALL_LAYERS) == sorted(layers.LAYERS)
    assert "sandbox_missing" not in result


async def test_a_missing_required_layer_is_refused_unless_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(layers.TEST_DISABLE_VAR, "landlock-fs")
    monkeypatch.delenv(layers.ALLOW_MISSING_VAR, raising=False)
    req = ChildRequest(env_id=ENV_ID, reward_source=BENIGN, steps=8)
    with pytest.raises(ChildFailed) as refused:
        await run_child(training_job.VALIDATE, req, tmp_path / "refused", timeout_s=120)
    assert refused.value.sandbox_unavailable
    assert not refused.value.reward_fault
    assert "landlock-fs" in refused.value.message
    assert layers.ALLOW_MISSING_VAR in refused.value.message
    assert "\n" not in refused.value.message

    monkeypatch.setenv(layers.ALLOW_MISSING_VAR, "landlock-fs")
    result = await run_child(training_job.VALIDATE, req, tmp_path / "accepted", timeout_s=120)
    assert result["ok"]
    assert "landlock-fs" not in result["sandbox"]
    assert "landlock-fs" in result["sandbox_missing"]
    assert {"clean-env", "rlimits", "seccomp"} <= set(result["sandbox"])
