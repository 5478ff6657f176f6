"""The OS layers, applied by the sandbox process to itself before it takes any generated code.

Order matters: limits first; then another identity and fresh namespaces (which need
/proc/self and, for root, privileges); then Landlock (files, TCP, scope); seccomp last, so that
everything before it may use calls it refuses. Each layer that cannot be applied is reported
with the reason, never skipped in silence; `layers.refusal` decides whether that is fatal.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
from pathlib import Path
from typing import Any

from activities.sandbox import landlock, layers, syscalls

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
NOBODY = 65534
DEFAULT_MEMORY_MB = 2048  # numpy and a judged trajectory; the trainer lives elsewhere
FILE_MB = 64
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


def _identity_and_namespaces(scratch: Path) -> tuple[str | None, str | None]:
    """(identity error, network namespace error): None where the layer holds."""
    if os.geteuid() == 0:
        # Root worker: a network namespace (root may), then the nobody user, which cannot read
        # root's files and cannot signal or trace the worker.
        net_err = None
        if _libc.unshare(CLONE_NEWNET | CLONE_NEWIPC) != 0:
            net_err = f"unshare: {_errno()}"
        for path in [scratch, *scratch.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
        return None, net_err
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC) != 0:
        why = f"unprivileged user namespaces refused: {_errno()}"
        return why, why
    # /proc/<pid>, not /proc/self: Docker's AppArmor profile refuses writes under the latter.
    me = f"/proc/{os.getpid()}"
    _write(f"{me}/setgroups", "deny")
    _write(f"{me}/uid_map", f"{uid} {uid} 1")
    _write(f"{me}/gid_map", f"{gid} {gid} 1")
    _drop_capabilities()
    return None, None


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
    """Apply every layer this platform has; (applied, {missing layer: reason})."""
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
    # Landlock's paths are opened now: once the uid changes, root's tree may be closed to it.
    result: dict[str, Any] = {}

    def prepare() -> None:
        result["rules"] = landlock.Ruleset(_read_only_paths(repo), [str(scratch)])

    if "landlock-fs" not in off:
        try:
            prepare()
        except Exception as exc:  # noqa: BLE001 - reported below
            result["error"] = f"{type(exc).__name__}: {exc}"
    ident: dict[str, str | None] = {}

    def identity() -> str | None:
        ident["identity"], ident["netns"] = _identity_and_namespaces(scratch)
        return ident["identity"]

    layer("identity", identity)
    # A change of credentials clears the parent-death signal: set it again, so the sandbox
    # never outlives its runner (PR_SET_PDEATHSIG = 1, SIGKILL = 9).
    _libc.prctl(1, 9, 0, 0, 0)
    parent = os.environ.get("POLICYFORGE_PARENT_PID", "")
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(1)
    if "identity" not in off:
        layer("netns", lambda: ident.get("netns"))
    else:
        missing["netns"] = "disabled with identity for this test"

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
