"""Limits of the runner process (trusted code: trainer, evaluator) and of the workers.

Generated code runs elsewhere, in the sandbox process (`confine.py` holds its layers). The
runner still limits itself, as a second line: address space, file size, CPU time for short
modes, no core dumps; a network namespace of its own where the kernel allows, and a seccomp
filter that refuses to start programs, fork processes or open network sockets (after it has
started its sandbox). Workers and runners mark themselves non-dumpable, so that no process of
the same uid can read their memory or /proc/<pid>/environ or trace them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import socket
import sys
from dataclasses import dataclass, field

CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
DEFAULT_MEMORY_MB = 4096  # PPO + MuJoCo + EGL peak near 1.5 GB of address space
SHORT_MODE_CPU_S = 300  # validation and judging; training is bounded by its activity instead


@dataclass
class Confinement:
    """What was applied (for logs and tests)."""

    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


PR_SET_DUMPABLE = 4


def mark_not_dumpable() -> bool:
    """No core dumps, no ptrace and no /proc/<pid>/{environ,mem} for other same-uid processes."""
    return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def _memory_mb() -> int:
    raw = os.environ.get("POLICYFORGE_SANDBOX_MEMORY_MB", "")
    return int(raw) if raw.isdigit() else DEFAULT_MEMORY_MB


def _limit(what: str, kind: int, value: int, out: Confinement) -> None:
    try:
        _, hard = resource.getrlimit(kind)
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (soft, hard if hard != resource.RLIM_INFINITY else soft))
        out.applied.append(what)
    except (ValueError, OSError) as exc:
        out.skipped.append(f"{what} ({exc})")


def _new_netns(out: Confinement) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) == 0:
        out.applied.append("network namespace")
    else:
        out.skipped.append(f"network namespace ({os.strerror(ctypes.get_errno())})")


def _seccomp(out: Confinement) -> None:
    try:
        import pyseccomp as sc

        flt = sc.SyscallFilter(defaction=sc.ALLOW)
        for name in ("execve", "execveat", "fork", "vfork"):
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        # clone3's flags are out of a filter's reach: refuse it, and C libraries fall back to
        # clone, where creating a process (no CLONE_THREAD) is refused and threads are not.
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
        flt.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
        flt.set_attr(sc.Attr.CTL_TSYNC, 1)  # every thread of the process, not only this one
        flt.load()
        out.applied.append("seccomp (no exec, fork or network sockets)")
    except Exception as exc:  # noqa: BLE001 - libseccomp missing or the kernel refuses
        out.skipped.append(f"seccomp ({type(exc).__name__}: {exc})")


def _cuda_torch() -> bool:
    """Whether this process loaded a CUDA build of torch (read, never imported here)."""
    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "version", None), "cuda", None) is not None


def confine(short: bool, extra_mb: int = 0) -> Confinement:
    """Limit this process; `short` for validation and judging (CPU time and file size caps).
    `extra_mb` raises the address-space cap by what the job's MuJoCo states reserve."""
    out = Confinement()
    _limit("no core dumps", resource.RLIMIT_CORE, 0, out)
    memory = _memory_mb()
    memory += max(0, extra_mb) if memory > 0 else 0
    if memory > 0 and _cuda_torch():
        # CUDA maps far more address space than it uses (torch's CUDA build alone maps 3.7 GB
        # at import): no address-space cap lets it start. The sandbox keeps its own cap.
        out.skipped.append("address space (torch's CUDA build is loaded)")
    elif memory > 0:
        _limit(f"address space {memory} MB", resource.RLIMIT_AS, memory * 2**20, out)
    file_mb = 64 if short else 2048
    _limit(f"file size {file_mb} MB", resource.RLIMIT_FSIZE, file_mb * 2**20, out)
    if short:
        _limit(f"CPU {SHORT_MODE_CPU_S} s", resource.RLIMIT_CPU, SHORT_MODE_CPU_S, out)
    _new_netns(out)
    _seccomp(out)
    return out
