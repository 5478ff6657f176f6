"""The seccomp allow-list of the sandbox process: what running Python and numpy needs, nothing
that starts programs or processes, opens sockets, traces or signals other processes, or changes
namespaces, mounts or credentials. Anything else fails with EPERM.

Files stay governed by Landlock (open/unlink/... are allowed here and confined there).
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import Any

CLONE_THREAD = 0x00010000
# prctl options the code may use: reading its own state, naming its threads and mappings. Not
# PR_SET_PDEATHSIG (clearing it lets the sandbox outlive a killed runner), PR_SET_DUMPABLE, or
# anything else that changes the process (issue 42).
PRCTL_ALLOWED = (
    2,  # PR_GET_PDEATHSIG
    3,  # PR_GET_DUMPABLE
    15,  # PR_SET_NAME (a thread's name)
    16,  # PR_GET_NAME
    21,  # PR_GET_SECCOMP
    23,  # PR_CAPBSET_READ
    30,  # PR_GET_TIMERSLACK
    39,  # PR_GET_NO_NEW_PRIVS
    42,  # PR_GET_THP_DISABLE
    0x53564D41,  # PR_SET_VMA (glibc names its anonymous mappings)
)

ALLOWED = (
    # files and descriptors (paths are confined by Landlock)
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "close",
    "close_range", "lseek", "fstat", "newfstatat", "stat", "lstat", "statx", "fstatfs",
    "statfs", "open", "openat", "openat2", "getdents", "getdents64", "readlink", "readlinkat",
    "access", "faccessat", "faccessat2", "fcntl", "dup", "dup2", "dup3", "ioctl", "pipe",
    "pipe2", "poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait",
    "epoll_pwait", "eventfd2", "getcwd", "chdir", "fchdir", "umask", "mkdir", "mkdirat",
    "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "ftruncate", "truncate",
    "fsync", "fdatasync", "fadvise64", "copy_file_range", "sendfile",
    # Not chmod, chown, utimensat or flock: Landlock does not govern a file's metadata or
    # locks, and the code could change those of files it can name outside its scratch.
    # memory
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "msync", "mincore", "membarrier",
    # threads, signals to itself, time
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
    "sigaltstack", "setitimer", "getitimer", "alarm", "timer_create", "timer_settime",
    "timer_gettime", "timer_getoverrun", "timer_delete", "clock_gettime", "clock_getres",
    "clock_nanosleep", "nanosleep", "gettimeofday", "time", "sched_yield", "sched_getaffinity",
    "sched_getparam", "sched_getscheduler", "getcpu",
    # identity and limits (reading; lowering its own)
    "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getgroups",
    "getresuid", "getresgid", "getpgrp", "getpgid", "getsid", "capget", "getrandom", "uname",
    "sysinfo", "getrlimit", "getrusage", "times", "arch_prctl",
    "exit", "exit_group", "restart_syscall",
)  # fmt: skip


def _rule(flt: Any, action: Any, name: str, *args: Any) -> None:
    # A name that is not a syscall on this architecture (open on aarch64) is left out.
    with contextlib.suppress(ValueError, RuntimeError, OSError):
        flt.add_rule(action, name, *args)


def install() -> None:
    """Load the filter for every thread of this process; raises when libseccomp or the kernel
    refuses (the caller reports the layer missing)."""
    import pyseccomp as sc

    flt = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
    allow = sc.ALLOW
    for name in ALLOWED:
        _rule(flt, allow, name)
    me = os.getpid()
    # Signals only to itself (SIGALRM for the call budget, abort()); never to the worker.
    _rule(flt, allow, "kill", sc.Arg(0, sc.EQ, me))
    _rule(flt, allow, "tgkill", sc.Arg(0, sc.EQ, me))
    # Limits of itself only (pid 0), never another process's.
    _rule(flt, allow, "prlimit64", sc.Arg(0, sc.EQ, 0))
    for option in PRCTL_ALLOWED:
        _rule(flt, allow, "prctl", sc.Arg(0, sc.EQ, option))
    # Space for a file only as it grows (mode 0, under RLIMIT_FSIZE): FALLOC_FL_KEEP_SIZE
    # reserved gigabytes of real disk past the size limit on an inherited file (issue 42).
    _rule(flt, allow, "fallocate", sc.Arg(1, sc.EQ, 0))
    # Threads yes, processes no: clone without CLONE_THREAD is refused; clone3's flags are out
    # of a filter's reach, so it answers ENOSYS and C libraries fall back to clone.
    _rule(flt, allow, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, CLONE_THREAD))
    _rule(flt, sc.ERRNO(errno.ENOSYS), "clone3")
    flt.set_attr(sc.Attr.CTL_TSYNC, 1)
    flt.load()
