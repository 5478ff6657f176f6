"""The template process: imports the runner's heavy modules once, then forks a child per run.

    python -m activities.runner.template FD

Importing torch, Stable-Baselines3, gymnasium and MuJoCo costs a runner child about 3 s of CPU
before it does anything, and a session starts several children. A worker starts one template
(`launch.py`) with the children's environment (no secrets: it is exec'd fresh, never forked from
the worker), and for each run sends it, over the socket FD, the job module, the arguments, the
working folder, the environment and the child's stdin, stdout and stderr. The template imports
the job module and every mode's `preload` (trusted code only: it never runs a job, and generated
code never runs in a runner at all), forks, and answers the child's pid; when a child ends it
answers its exit status, as `Popen.returncode` reads (negative: killed by that signal).

The forked child starts its own session, takes the run's descriptors, folder and environment, and
runs the job module as `python -m` would; `child.main` then confines it as it would a fresh
process. The template ends with the worker (PR_SET_PDEATHSIG), and its children with it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from activities.runner.child import die_with
from activities.sandbox.os_limits import mark_not_dumpable

MAX_MESSAGE = 1 << 20
PR_SET_NAME = 15
READY = "ready"


@dataclass
class Fork:
    """What a forked child runs: `python -m module *args` in `cwd` with `env` and `fds`."""

    module: str
    args: list[str]
    cwd: str
    env: dict[str, str]
    fds: list[int]  # stdin, stdout, stderr


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One message on the template's socket (SOCK_SEQPACKET: one JSON object per packet)."""
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def _warm(module: str) -> None:
    """Import a job module and what each of its modes preloads (idempotent)."""
    job = importlib.import_module(module)
    for spec in getattr(job, "MODES", {}).values():
        for name in getattr(spec, "preload", ()):
            importlib.import_module(name)


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        send(sock, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})


def serve(sock: socket.socket) -> Fork | None:
    """Answer fork requests until the worker closes the socket (None), or, in a forked child,
    the run it is to become."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    send(sock, {"event": READY, "pid": os.getpid()})
    while True:
        readable, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(sock)
        if sock.fileno() not in readable:
            continue
        data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
        if not data:
            return None
        request = json.loads(data)
        if "warm" in request:  # a worker's job module, imported before its first run
            try:
                _warm(request["warm"])
            except Exception as exc:  # noqa: BLE001 - the run that needs it will say why
                print(f"runner template: {request['warm']}: {exc}", file=sys.stderr)
            continue
        try:
            _warm(request["module"])
        except Exception as exc:  # noqa: BLE001 - the worker runs this one without us
            for fd in fds:
                os.close(fd)
            send(sock, {"id": request["id"], "error": f"{type(exc).__name__}: {exc}"})
            continue
        me = os.getpid()
        # The child's die-with-parent check (child.py) is against us.
        request["env"]["POLICYFORGE_PARENT_PID"] = str(me)
        sys.stdout.flush()
        sys.stderr.flush()
        started_r, started_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            die_with(me)
            # Its own session before the worker learns its pid: the worker kills runs by group.
            os.setsid()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w, started_r, started_w):
                os.close(fd)
            sock.close()
            return Fork(request["module"], request["args"], request["cwd"], request["env"], fds)
        for fd in (*fds, started_w):
            os.close(fd)
        os.read(started_r, 1)  # end of file once the child closed its end: after setsid
        os.close(started_r)
        send(sock, {"id": request["id"], "pid": pid})


def become(run: Fork) -> None:
    """This forked process (in a session of its own already) turns into the run: the run's
    descriptors, folder, environment and name."""
    for target, fd in enumerate(run.fds):
        os.dup2(fd, target)
    for fd in set(run.fds) - {0, 1, 2}:
        os.close(fd)
    os.chdir(run.cwd)
    os.environ.clear()
    os.environ.update(run.env)
    # `ps` and `top` show the command name: the mode, not the template's command line.
    name = f"pf-{run.args[0] if run.args else run.module}"[:15].encode()
    ctypes.CDLL(None).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    sys.argv = [run.module, *run.args]
    # Run afresh as __main__ (what it imports stays loaded): runpy warns about a module that
    # is already imported.
    sys.modules.pop(run.module, None)


def main(argv: list[str]) -> int:
    """Serve the worker on socket argv[0]; in a forked child, run the job (see the docstring)."""
    worker = os.environ.get("POLICYFORGE_PARENT_PID", "")
    die_with(int(worker) if worker.isdigit() else None)
    # As the runner children do (child.py): no core dump, ptrace or /proc/<pid>/mem into the
    # process every child is forked from.
    mark_not_dumpable()
    sock = socket.socket(fileno=int(argv[0]))
    run = serve(sock)
    if run is None:
        return 0
    become(run)
    # As `python -m` would, but without tearing down the template's many modules on the way out
    # (about a second with torch loaded): exit handlers run, then the process ends.
    status: object = 0
    try:
        runpy.run_module(run.module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        status = exc.code
    except BaseException:  # noqa: BLE001 - reported as python would, on stderr
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(_exit_status(status))


def _exit_status(code: object) -> int:
    """SystemExit's code as the process status python gives it (a message prints, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
