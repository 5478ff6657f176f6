"""The runner of a validation, training, evaluation or judging run: trusted code only.

    python -m activities.runner.child MODE --request REQ.json --out DIR

MODE: validate, train, evaluate (reward code), validate_judge, judge (judge code).

Generated code never runs in this process: the runner starts a sandbox process
(`activities.sandbox.host`, confined by the OS layers) and hands it transitions to score or
trajectories to judge, so nothing the code does can reach the trainer, its objects or its files.
Progress goes to stdout as JSON lines ({"event": "progress", "timesteps": N, "mean_return": x});
the outcome goes to DIR/result.json (see activities/runner/protocol.py), written by this
process only: the sandbox cannot reach DIR. On failure the runner writes a one-line error to
result.json and stderr and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from activities.runner.protocol import RESULT_FILE, ChildRequest
from activities.sandbox.errors import code_error, one_line
from activities.sandbox.layers import SandboxUnavailable
from activities.sandbox.os_limits import confine, mark_not_dumpable

if TYPE_CHECKING:
    from activities.sandbox.client import SandboxClient
    from activities.training.reward_runtime import Rewards

EXIT_FAILED = 1


def _protocol_stream() -> IO[str]:
    """Keep the real stdout for JSON lines; send fd 1 and sys.stdout (prints) to stderr."""
    sys.stdout.flush()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


SHORT_MODES = ("validate", "validate_judge", "judge")
SHORT_MODE_SANDBOX_CPU_S = 300


def _die_with_parent() -> None:
    """End with the worker that started us, even when it is SIGKILLed: no orphan keeps
    training (and writing) after its activity has been handed to another worker."""
    import ctypes
    import signal

    parent = os.environ.get("POLICYFORGE_PARENT_PID", "")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(EXIT_FAILED)  # the parent was already gone before the line above


def _preload(mode: str) -> None:
    """Import the trusted libraries a mode needs before the process confines itself: some do
    things at import time that the confinement forbids (glfw runs a subprocess)."""
    import importlib

    modules = ["activities.judging.judge_runtime"]
    if mode != "judge":
        modules += ["gymnasium.envs.mujoco", "activities.training.sim"]
    if mode in ("train", "evaluate", "validate_judge"):
        modules += ["torch", "stable_baselines3", "activities.training.rollout"]
    if mode == "train":
        modules += ["activities.training.ppo", "activities.training.offpolicy", "tensorboardX"]
    if mode == "validate":
        modules += ["activities.training.validate"]
    for name in modules:
        importlib.import_module(name)


def _rewards(mode: str, req: ChildRequest, box: SandboxClient | None) -> Rewards:
    """The session's reward: in the sandbox; in-process only for the benchmark's own reward."""
    from activities.sandbox.client import SandboxRewards
    from activities.training.reward_runtime import LocalRewards, load_reward

    source = req.reward_source
    if source is None:
        if req.reward_path is None:
            raise ValueError(f"{mode} needs reward_source or reward_path")
        source = Path(req.reward_path).read_text()
    # Validation rejects a NaN reward outright; training zeroes and counts the odd one.
    strict = mode == "validate"
    if req.unguarded:
        from activities.runner.baseline_reward import RUN_FORWARD

        if source != RUN_FORWARD:
            raise ValueError("unguarded runs take only bench-sandbox's own reward")
        return LocalRewards(load_reward(source, req.reward_filename, strict=strict, guarded=False))
    assert box is not None
    return SandboxRewards(
        box, source, req.reward_filename, strict=strict, python_layers=req.python_layers
    )


def run(
    mode: str,
    req: ChildRequest,
    out: Path,
    emit: Callable[[dict[str, Any]], None],
    box: SandboxClient | None,
) -> dict[str, Any]:
    if mode == "judge":
        assert box is not None
        return _judge(req, box)
    if mode in ("train", "evaluate"):  # the others need no torch: skip its import (1-2 s)
        import torch

        # One core per run: a second torch thread gives nothing and collapses under load.
        torch.set_num_threads(1)
    reward = _rewards(mode, req, box)

    if mode == "validate_judge":
        from activities.training.rollout import random_trajectory

        assert box is not None
        trajectory = random_trajectory(req.env_id, reward, req.steps, req.seed)
        [judged] = _judge_all(req, box, [trajectory])
        return {"steps": len(trajectory["action"]), "judgment": judged}

    if mode == "validate":
        from activities.training.validate import validate

        return validate(req.env_id, reward, req.steps, req.seed, req.env_kwargs)
    if mode == "train":
        common: dict[str, Any] = {
            "env_kwargs": req.env_kwargs,
            "progress_interval_s": req.progress_interval_s,
            "checkpoint_every": req.checkpoint_every,
            "resume_dir": Path(req.resume_dir) if req.resume_dir else None,
            "eval_checkpoint_episodes": req.eval_checkpoint_episodes,
            "eval_max_steps": req.max_steps,
        }
        if req.algo != "ppo":
            from activities.training.offpolicy import train as train_offpolicy

            return train_offpolicy(
                req.algo, req.env_id, reward, req.timesteps, req.seed, out, emit, **common
            )
        from activities.training.ppo import train

        return train(
            req.env_id,
            reward,
            req.timesteps,
            req.seed,
            out,
            emit,
            ppo_overrides=req.ppo,
            init_dir=Path(req.init_dir) if req.init_dir else None,
            eval_every=req.eval_every,
            **common,
        )
    from activities.training.rollout import evaluate

    return evaluate(
        req.env_id,
        reward,
        Path(req.model_path) if req.model_path else out / "model.zip",
        Path(req.vecnormalize_path) if req.vecnormalize_path else out / "vecnormalize.npz",
        out,
        req.seed,
        req.max_steps,
        req.record_video,
        req.video_size,
        req.env_kwargs,
        req.algo,
    )


def _judge_source(req: ChildRequest) -> str:
    if req.judge_source is None:
        raise ValueError("judge modes need judge_source")
    return req.judge_source


def _judge_all(
    req: ChildRequest, box: SandboxClient, trajectories: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each trajectory judged in the sandbox; the answers checked here as well."""
    from activities.judging.judge_runtime import JudgeLoadError, check_judgment, judge_budget_s
    from activities.sandbox.client import CodeFault, judge_in_sandbox

    try:
        raw = judge_in_sandbox(
            box,
            _judge_source(req),
            req.judge_filename,
            trajectories,
            req.criteria,
            python_layers=req.python_layers,
            timeout_s=judge_budget_s() + 30,
        )
    except CodeFault as exc:
        raise JudgeLoadError(str(exc)) from None
    return [check_judgment(r, req.criteria) for r in raw]


def _judge(req: ChildRequest, box: SandboxClient) -> dict[str, Any]:
    from activities.judging.judge_runtime import load_trajectory

    if req.trajectory_path is None:
        raise ValueError("judge needs trajectory_path")
    paths = [req.trajectory_path, *req.extra_trajectories]
    judged = _judge_all(req, box, [load_trajectory(Path(p)) for p in paths])
    return {"judgment": judged[0], "extra_scores": [j["score"] for j in judged[1:]]}


def _start_sandbox(mode: str, req: ChildRequest) -> SandboxClient | None:
    """The sandbox process for this run's generated code (None for the benchmark's baseline);
    SandboxUnavailable when a required layer is missing."""
    if req.unguarded and mode in ("validate", "train", "evaluate"):
        return None
    from activities.sandbox.client import SandboxClient

    cpu = SHORT_MODE_SANDBOX_CPU_S if mode in SHORT_MODES else 0
    return SandboxClient(cpu_s=cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m activities.runner.child")
    parser.add_argument(
        "mode", choices=("validate", "train", "evaluate", "validate_judge", "judge")
    )
    parser.add_argument("--request", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

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
    t0 = time.monotonic()
    try:
        # Started first: the sandbox imports numpy while this process imports torch.
        box = _start_sandbox(args.mode, req)
        _preload(args.mode)
        confine(short=args.mode in SHORT_MODES)
        try:
            result = run(args.mode, req, args.out, emit, box)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - every failure becomes one line
            reward_msg = code_error(exc, (req.reward_filename, req.judge_filename))
            if reward_msg is None:
                traceback.print_exc()
            return fail(
                reward_msg or one_line(f"{type(exc).__name__}: {exc}"), reward_msg is not None
            )
    except SandboxUnavailable as exc:
        return fail(one_line(str(exc)), False, sandbox_unavailable=True)
    finally:
        if box is not None:
            box.close()
    sandbox = box.applied if box is not None else ["none: in-process benchmark baseline"]
    result = {"ok": True, "mode": args.mode, **result, "sandbox": sandbox}
    if box is not None and box.missing:
        result["sandbox_missing"] = box.missing
    result.setdefault("child_seconds", round(time.monotonic() - t0, 2))
    result_path.write_text(json.dumps(result, indent=2))
    emit({"event": "done", "mode": args.mode})
    return 0


if __name__ == "__main__":
    sys.exit(main())
