"""The runner process's harness: what every validation, training, evaluation or judging run
does around its mode's own work. Trusted code only.

A stage's job module (the training stage's `job`, the judging stage's `job`) names its modes
(`ModeSpec`: the handler, what to import before confining, short or long) and calls `main`:

    python -m <job module> MODE --request REQ.json --out DIR

Generated code never runs in this process: the harness starts a sandbox process
(`activities.sandbox.host`, confined by the OS layers) that the handler hands transitions to
score or trajectories to judge, so nothing the code does can reach the trainer, its objects or
its files. Progress goes to stdout as JSON lines ({"event": "progress", "timesteps": N,
"mean_return": x}); the outcome goes to DIR/result.json (see activities/runner/protocol.py),
written by this process only: the sandbox cannot reach DIR. On failure the runner writes a
one-line error to result.json and stderr and exits 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from activities.runner.protocol import RESULT_FILE, ChildRequest
from activities.sandbox.errors import code_error, one_line
from activities.sandbox.layers import SandboxUnavailable
from activities.sandbox.os_limits import confine, mark_not_dumpable

if TYPE_CHECKING:
    from activities.sandbox.client import SandboxClient

EXIT_FAILED = 1
SHORT_MODE_SANDBOX_CPU_S = 300
# Imported before confining in every mode: `code_error` reads their error types, and the judge
# modes check the sandbox's answers with `judge_code`.
ALWAYS_PRELOAD = ("activities.sandbox.judge_code", "activities.sandbox.reward_code")

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Run:
    """What a mode's handler gets besides its request: where to write, how to report progress,
    and the run's sandbox (None only in an unguarded benchmark run)."""

    mode: str
    out: Path
    emit: Emit
    box: SandboxClient | None
    # train_batch: one sandbox per member, in the request's order (box is the first).
    boxes: list[SandboxClient] = field(default_factory=list)
    # A mode that runs the reward and the judge (ModeSpec.judge_apart): the judge's own.
    judge_box: SandboxClient | None = None

    def sandbox(self) -> SandboxClient:
        """The run's sandbox; an error in the one case without (a mode that allows unguarded
        runs, asked for one)."""
        if self.box is None:
            raise RuntimeError(f"{self.mode} has no sandbox in an unguarded run")
        return self.box

    def judge_sandbox(self) -> SandboxClient:
        """The sandbox the judge code runs in: its own where the mode also runs the reward."""
        return self.judge_box or self.sandbox()


Handler = Callable[[ChildRequest, Run], dict[str, Any]]


@dataclass(frozen=True)
class ModeSpec:
    """One mode of a job module.

    `preload`: the trusted modules the mode needs, imported before the process confines itself
    (some do things at import time that the confinement forbids: glfw runs a subprocess).
    `short`: validation and judging: tighter limits on this process and a CPU budget on its
    sandbox. `unguarded_ok`: the mode may run the benchmark's own reward in-process when the
    request says `unguarded` (the handler must refuse any other reward); every other run of
    every mode has its sandbox.
    """

    handler: Handler
    preload: tuple[str, ...] = ()
    # MB added to the address-space cap for what the job's envs reserve (training's many
    # MuJoCo states); None: the base cap fits.
    reserve_mb: Callable[[ChildRequest], int] | None = None
    short: bool = False
    unguarded_ok: bool = False
    # Added to this process's niceness before anything starts, its sandboxes included: the
    # evaluators beside training take only what training leaves of the machine.
    niceness: int = 0
    # The mode runs the session's reward and its judge: the judge gets a sandbox process of its
    # own (Run.judge_box), so nothing the reward's module did (a seeded global generator, an
    # attribute set on a module) reaches it.
    judge_apart: bool = False


def _protocol_stream() -> IO[str]:
    """Keep the real stdout for JSON lines; send fd 1 and sys.stdout (prints) to stderr."""
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _die_with_parent() -> None:
    """End with the worker that started us, even when it is SIGKILLed: no orphan keeps
    training (and writing) after its activity has been handed to another worker."""
    parent = os.environ.get("POLICYFORGE_PARENT_PID", "")
    die_with(int(parent) if parent.isdigit() else None)


def die_with(parent: int | None) -> None:
    """SIGKILL this process when its parent ends, and end it now if `parent` (the pid it was
    started by) is already gone."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:
        os._exit(EXIT_FAILED)  # the parent was already gone before the line above


def _preload(spec: ModeSpec) -> None:
    """Import what the mode needs while the process may still do anything."""
    for name in (*ALWAYS_PRELOAD, *spec.preload):
        importlib.import_module(name)


def _start_sandboxes(spec: ModeSpec, req: ChildRequest) -> list[SandboxClient]:
    """The sandbox processes for this run's generated code: one, or one per batch member
    (none for the benchmark's baseline); SandboxUnavailable when a required layer is
    missing, after closing the ones already started."""
    if req.unguarded and spec.unguarded_ok:
        return []
    from activities.sandbox.client import SandboxClient

    boxes: list[SandboxClient] = []
    try:
        for _ in range(max(1, len(req.members)) + int(spec.judge_apart)):
            boxes.append(SandboxClient(cpu_s=SHORT_MODE_SANDBOX_CPU_S if spec.short else 0))
    except BaseException:
        for box in boxes:
            box.close()
        raise
    return boxes


def main(prog: str, modes: Mapping[str, ModeSpec], argv: list[str] | None = None) -> int:
    """Run one mode of a job module (see the module docstring); the process's exit status."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}")
    parser.add_argument("mode", choices=tuple(modes))
    parser.add_argument("--request", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    spec = modes[args.mode]

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message=".*settotalmass.*")
    os.environ.setdefault("MUJOCO_GL", "egl")
    proto = _protocol_stream()
    args.out.mkdir(parents=True, exist_ok=True)
    result_path = args.out / RESULT_FILE

    def fail(message: str, reward_fault: bool, **extra: Any) -> int:
        sys.stderr.write(message + "\n")
        result = {"ok": False, "error": message, "reward_fault": reward_fault, **extra}
        result_path.write_text(json.dumps(result))
        return EXIT_FAILED

    def emit(event: dict[str, Any]) -> None:
        proto.write(json.dumps(event) + "\n")

    _die_with_parent()
    mark_not_dumpable()
    req = ChildRequest.model_validate_json(args.request.read_text())
    box: SandboxClient | None = None
    boxes: list[SandboxClient] = []
    t0 = time.monotonic()
    if spec.niceness:
        os.nice(spec.niceness)
    try:
        # Started first: the sandbox imports numpy while this process imports torch.
        boxes = _start_sandboxes(spec, req)
        box = boxes[0] if boxes else None
        judge_box = boxes[-1] if spec.judge_apart and len(boxes) > 1 else None
        member_boxes = boxes[:-1] if judge_box is not None else boxes
        _preload(spec)
        confine(short=spec.short, extra_mb=spec.reserve_mb(req) if spec.reserve_mb else 0)
        try:
            result = spec.handler(req, Run(args.mode, args.out, emit, box, member_boxes, judge_box))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - every failure becomes one line
            members = tuple(m.reward_filename for m in req.members)
            reward_msg = code_error(exc, (req.reward_filename, req.judge_filename, *members))
            if reward_msg is None:
                traceback.print_exc()
            return fail(
                reward_msg or one_line(f"{type(exc).__name__}: {exc}"), reward_msg is not None
            )
    except SandboxUnavailable as exc:
        return fail(one_line(str(exc)), False, sandbox_unavailable=True)
    finally:
        for opened in boxes:
            opened.close()
    sandbox = box.applied if box is not None else ["none: in-process benchmark baseline"]
    result = {"ok": True, "mode": args.mode, **result, "sandbox": sandbox}
    if box is not None and box.missing:
        result["sandbox_missing"] = box.missing
    result.setdefault("child_seconds", round(time.monotonic() - t0, 2))
    result_path.write_text(json.dumps(result, indent=2))
    emit({"event": "done", "mode": args.mode})
    return 0
