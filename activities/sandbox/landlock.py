"""Landlock through raw system calls: filesystem, TCP and scope rules an unprivileged process
applies to itself, for good (no way back, inherited by anything it could start).

Only the parts the sandbox uses: read-only trees, one read-write tree, no TCP at all, and (ABI 6+)
no signals or abstract unix sockets across the sandbox's boundary.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field

# Syscall numbers are the same on x86_64 and aarch64 (the unified table).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def abi_version() -> int:
    """The kernel's Landlock ABI (0: none, or disabled at boot)."""
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _fs_rights(abi: int) -> int:
    return _FS_BY_ABI[max(k for k in _FS_BY_ABI if k <= abi)]


@dataclass
class LandlockResult:
    """What Landlock enforced (per kind of rule), at which ABI, and the paths it skipped."""

    abi: int
    filesystem: bool = False
    network: bool = False
    scope: bool = False
    skipped_paths: list[str] = field(default_factory=list)


def _errno_text() -> str:
    return os.strerror(ctypes.get_errno())


class Ruleset:
    """Rules prepared while the paths can still be opened (before the process changes its
    uid), enforced later with `enforce`. Raises OSError when the kernel refuses."""

    def __init__(self, read_only: list[str], read_write: list[str]) -> None:
        abi = abi_version()
        if abi < 1:
            raise OSError("the kernel has no Landlock (or it is disabled)")
        fs = _fs_rights(abi)
        net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
        attr = _RulesetAttr(fs, net, scoped)
        fd = _libc.syscall(
            _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0
        )
        if fd < 0:
            raise OSError(f"landlock_create_ruleset: {_errno_text()}")
        self.fd = int(fd)
        self.result = LandlockResult(abi=abi, network=bool(net), scope=bool(scoped))
        try:
            for path in read_only:
                _allow(self.fd, path, FS_READ_FILE | FS_READ_DIR, self.result)
            # Everything inside the scratch tree but devices (and executing: no exec at all).
            writing = fs & ~(FS_EXECUTE | FS_MAKE_CHAR | FS_MAKE_BLOCK)
            for path in read_write:
                _allow(self.fd, path, writing, self.result)
        except OSError:
            os.close(self.fd)
            raise

    def enforce(self) -> LandlockResult:
        """Read `read_only`, everything inside `read_write`, nothing else; no TCP; no signals
        or abstract sockets out of the domain where the ABI has them. For good."""
        try:
            if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(f"no_new_privs: {_errno_text()}")
            if _libc.syscall(_SYS_RESTRICT_SELF, self.fd, 0) != 0:
                raise OSError(f"landlock_restrict_self: {_errno_text()}")
        finally:
            os.close(self.fd)
        self.result.filesystem = True
        return self.result


def _allow(ruleset: int, path: str, rights: int, result: LandlockResult) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        result.skipped_paths.append(path)
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_ONLY
        attr = _PathBeneathAttr(rights, fd)
        if _libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(attr), 0) != 0:
            raise OSError(f"landlock_add_rule {path}: {_errno_text()}")
    finally:
        os.close(fd)
