"""The OS layers, applied by the sandbox process to itself before it takes any generated code.

Order matters: limits first; then fresh namespaces (which need /proc/self and, for root,
privileges), scratch as a tmpfs of its own in the new mount namespace, Landlock's rules (opened
while root's tree is still open to the process, and after the mount, so that they name the
tmpfs); then another identity, the task limit (counted per uid, so only once the uid is the
sandbox's own), Landlock (files, TCP, scope); seccomp last, so that everything before it may use
calls it refuses. Each layer that cannot be applied is reported with the reason, never skipped
in silence; `layers.refusal` decides whether that is fatal.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.sandbox import landlock, layers, syscalls
from activities.sandbox.limits import (
    FILE_MB,
    MAX_THREADS,
    SCRATCH_FILES,
    SCRATCH_MB,
    SCRATCH_TMPFS,
)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
# A root worker's sandbox runs as a uid of its own, this plus its pid: no account, no other
# sandbox and no file has it, so RLIMIT_NPROC counts this sandbox's threads alone, and none of
# the filesystem's reserved blocks are its (on this machine they are nobody's).
SANDBOX_UID_BASE = 0x7F000000
DEFAULT_MEMORY_MB = 2048  # numpy and a judged trajectory; the trainer lives elsewhere
MAX_OPEN_FILES = 64
# What the sandbox's environment may hold (the client builds it from nothing).
_ENV_NAMES = {
    "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONWARNINGS", "HOME",
    "TMPDIR", "LANG", "LC_ALL", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
    "POLICYFORGE_PARENT_PID", "LD_LIBRARY_PATH",
}  # fmt: skip

_libc = ctypes.CDLL(None, use_errno=True)


def _errno() -> str:
    return os.strerror(ctypes.get_errno())


def _clean_env() -> str | None:
    extra = sorted(
        k for k in os.environ if k not in _ENV_NAMES and not k.startswith("POLICYFORGE_SANDBOX_")
    )
    return f"unexpected variables {', '.join(extra)[:200]}" if extra else None


def _rlimits(cpu_s: int, memory_mb: int) -> None:
    limits = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, FILE_MB << 20),
        (resource.RLIMIT_NOFILE, MAX_OPEN_FILES),
        (resource.RLIMIT_AS, (memory_mb or DEFAULT_MEMORY_MB) << 20),
    ]
    if cpu_s > 0:
        limits.append((resource.RLIMIT_CPU, cpu_s))
    for kind, value in limits:
        _, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities() -> None:
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(f"capset: {_errno()}")


def _task_limit() -> None:
    """RLIMIT_NPROC counts the tasks of the process's uid within its user namespace: set once
    that uid is the sandbox's own (set before a user namespace is made, it would also become
    that namespace's cap on every task of the worker's uid)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    value = MAX_THREADS if hard == resource.RLIM_INFINITY else min(MAX_THREADS, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (value, value))


def _mount(
    source: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None
) -> None:
    if _libc.mount(source, target, fstype, ctypes.c_ulong(flags), data) != 0:
        raise OSError(f"mount {target.decode(errors='replace')}: {_errno()}")


def _scratch_tmpfs(scratch: Path, uid: int, gid: int) -> None:
    """Scratch becomes a tmpfs in a mount namespace of this process's own: the kernel refuses
    bytes and files past the limits, nothing reaches the disk, and it is gone with the process.
    Needs CAP_SYS_ADMIN over the namespace: root's, or a user namespace's own."""
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(f"unshare(CLONE_NEWNS): {_errno()}")
    # Private: the mount stays in this namespace and nothing mounted outside propagates in.
    _mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    options = f"size={SCRATCH_MB}m,nr_inodes={SCRATCH_FILES},mode=0700,uid={uid},gid={gid}"
    _mount(
        b"tmpfs", os.fsencode(scratch), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options.encode()
    )
    os.chdir(scratch)  # the working directory was the folder underneath


def _try(step: Callable[[], object]) -> str | None:
    try:
        step()
    except Exception as exc:  # noqa: BLE001 - any refusal becomes the reason
        return f"{type(exc).__name__}: {exc}"[:200]
    return None


@dataclass
class _Namespaces:
    """What entering namespaces gave: None where a part holds, else why not."""

    uid: int
    gid: int
    identity: str | None = None
    netns: str | None = None
    tmpfs: str | None = None


def _enter_namespaces(scratch: Path, tmpfs: bool) -> _Namespaces:
    """Fresh network, IPC and mount namespaces (and, for a worker that is not root, a user
    namespace that makes it possible), and scratch as a tmpfs in them; the uid to become."""
    if os.geteuid() == 0:
        uid = SANDBOX_UID_BASE + os.getpid()
        ns = _Namespaces(uid, uid)
        if _libc.unshare(CLONE_NEWNET | CLONE_NEWIPC) != 0:
            ns.netns = f"unshare: {_errno()}"
    else:
        uid, gid = os.getuid(), os.getgid()
        ns = _Namespaces(uid, gid)
        if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC) != 0:
            why = f"unprivileged user namespaces refused: {_errno()}"
            ns.identity = ns.netns = ns.tmpfs = why
            return ns
        # /proc/<pid>, not /proc/self: Docker's AppArmor profile refuses writes under the latter.
        me = f"/proc/{os.getpid()}"
        _write(f"{me}/setgroups", "deny")
        _write(f"{me}/uid_map", f"{uid} {uid} 1")
        _write(f"{me}/gid_map", f"{gid} {gid} 1")
    ns.tmpfs = (
        _try(lambda: _scratch_tmpfs(scratch, ns.uid, ns.gid)) if tmpfs else "disabled for this test"
    )
    return ns


def _become_sandbox(scratch: Path, ns: _Namespaces) -> None:
    """Root: the sandbox's own uid, which cannot read root's files nor signal or trace the
    worker. Otherwise: no capabilities left in its user namespace."""
    if os.geteuid() != 0:
        _drop_capabilities()
        return
    for path in [scratch, *scratch.rglob("*")]:
        os.chown(path, ns.uid, ns.gid, follow_symlinks=False)
    os.setgroups([])
    os.setresgid(ns.gid, ns.gid, ns.gid)
    os.setresuid(ns.uid, ns.uid, ns.uid)


def _read_only_paths(repo: Path) -> list[str]:
    """The interpreter and its libraries, never the project's own tree (it may hold a .env)."""
    candidates = {sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates |= {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib"}
    out = []
    for c in sorted(candidates):
        path = Path(c).resolve()
        # A prefix that holds the project (a system Python above the checkout) is left out:
        # everything needed is imported before the process confines itself.
        if path.exists() and not (path == repo or repo.is_relative_to(path)):
            out.append(str(path))
    return out


def confine_sandbox(
    scratch: Path, *, cpu_s: int = 0, memory_mb: int = 0
) -> tuple[list[str], dict[str, str]]:
    """Apply every layer this platform has; (applied, {missing layer: reason}). `missing` may
    also hold SCRATCH_TMPFS: scratch is a plain folder, measured by the runner's watchdog."""
    applied: list[str] = []
    missing: dict[str, str] = {}
    off = layers.disabled_for_test()
    repo = Path(__file__).resolve().parents[2]

    def layer(name: str, apply) -> None:  # noqa: ANN001 - a local thunk
        if name in off:
            missing[name] = "disabled for this test"
            return
        try:
            why = apply()
        except Exception as exc:  # noqa: BLE001 - any refusal becomes the reason
            why = f"{type(exc).__name__}: {exc}"
        if why:
            missing[name] = str(why)[:200]
        else:
            applied.append(name)

    layer("clean-env", _clean_env)
    layer("rlimits", lambda: _rlimits(cpu_s, memory_mb))
    scratch = scratch.resolve()
    if "identity" in off:
        ns = _Namespaces(os.getuid(), os.getgid(), "disabled for this test")
        ns.netns = "disabled with identity for this test"
        ns.tmpfs = "no mount namespace: identity disabled for this test"
    else:
        try:
            ns = _enter_namespaces(scratch, tmpfs=SCRATCH_TMPFS not in off)
        except Exception as exc:  # noqa: BLE001 - reported as the layers it stops
            why = f"{type(exc).__name__}: {exc}"[:200]
            ns = _Namespaces(os.getuid(), os.getgid(), why, why, why)
    # Landlock's paths are opened now: after the mount (they name the tmpfs), and before the
    # uid changes (root's tree may be closed to the new one).
    result: dict[str, Any] = {}

    def prepare() -> None:
        result["rules"] = landlock.Ruleset(_read_only_paths(repo), [str(scratch)])

    if "landlock-fs" not in off:
        try:
            prepare()
        except Exception as exc:  # noqa: BLE001 - reported below
            result["error"] = f"{type(exc).__name__}: {exc}"

    def identity() -> str | None:
        if ns.identity is None:
            _become_sandbox(scratch, ns)
        return ns.identity

    layer("identity", identity)
    # A change of credentials clears the parent-death signal: set it again, so the sandbox
    # never outlives its runner (PR_SET_PDEATHSIG = 1, SIGKILL = 9).
    _libc.prctl(1, 9, 0, 0, 0)
    parent = os.environ.get("POLICYFORGE_PARENT_PID", "")
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(1)
    if "identity" not in off:
        layer("netns", lambda: ns.netns)
    else:
        missing["netns"] = ns.netns or ""
    if "rlimits" in applied:
        nproc = _try(_task_limit)
        if nproc:
            applied.remove("rlimits")
            missing["rlimits"] = f"RLIMIT_NPROC: {nproc}"
    if ns.tmpfs:
        missing[SCRATCH_TMPFS] = f"{ns.tmpfs}; the runner's watchdog measures scratch instead"

    def landlock_fs() -> str | None:
        if "rules" not in result:
            return result.get("error", "not prepared")
        result["ll"] = result["rules"].enforce()
        return None

    layer("landlock-fs", landlock_fs)
    ll = result.get("ll")
    for name, ok, abi in (
        ("landlock-net", ll and ll.network, 4),
        ("landlock-scope", ll and ll.scope, 6),
    ):
        if name in off or ll is None:
            missing[name] = missing.get("landlock-fs", "disabled for this test")
        elif ok:
            applied.append(name)
        else:
            missing[name] = f"Landlock ABI {ll.abi} < {abi}"
    layer("seccomp", syscalls.install)
    return applied, missing
