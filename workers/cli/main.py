"""The `policyforge` command line: argument parsing, and dispatch to the module that does each
command's work.

Sessions on Temporal (`run`, `status`, the steering updates) go through the session client,
`workers/cli/sessions.py`, which prints with `workers/cli/render.py`; the commands that need no
server (`train`, `check-*`, the benches) are in `workers/cli/local_commands.py`; `dev`, `worker`
and `demo` host services and worker pools (`workers/dev/main.py`, `workers/pools/main.py`,
`workers/dev/demo.py`).

Each command imports what it needs when it runs (in `_main`'s branch for it): building the parser
imports no client, trainer or simulator, so `--help`, `status` and `sessions` start fast
(tests/workers/test_cli_imports.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workers.cli.lessons import add_parser as lessons_parser
from workers.cli.play import add_parser as play_parser
from workers.cli.session_list import add_parser as sessions_parser
from workflows.contracts.session import ENV_IDS

if TYPE_CHECKING:
    from collections.abc import Coroutine

# Commands that send an update to a running session, and their help.
STEERING = {
    "approve": "approve the reward waiting at an approval gate (--reject to refuse it)",
    "feedback": "tell the reviser what to change in the next iteration",
    "abort": "stop a session: cancel running work, keep the best policy so far",
    "extend": "allow a session more iterations",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="policyforge", description="Describe a behaviour; get a trained MuJoCo policy."
    )
    sub = p.add_subparsers(dest="command", required=True)

    dev = sub.add_parser(
        "dev", help="embedded Temporal + S3, the dashboard and the three worker pools, one process"
    )
    dev.add_argument("--no-dashboard", action="store_true", help="leave the dashboard out")

    ui = sub.add_parser("ui", help="the web dashboard against TEMPORAL_ADDRESS and S3")
    ui.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    ui.add_argument("--port", type=int, default=None, help="port (default 8234)")

    worker = sub.add_parser("worker", help="run one or more worker pools against TEMPORAL_ADDRESS")
    worker.add_argument("pools", nargs="+", choices=["llm", "train", "judge"])
    worker.add_argument(
        "--gpu",
        action="store_true",
        help="the train pool also serves sessions that ask for a GPU (needs CUDA; sets "
        "POLICYFORGE_TRAIN_DEVICE=cuda)",
    )

    demo = sub.add_parser("demo", help="run the demo session end to end on embedded services")
    demo.add_argument("--timesteps", type=int, default=None, help="per-iteration budget")
    demo.add_argument("--out", type=Path, default=Path("demo-output"))

    run = sub.add_parser("run", help="start a session and follow it")
    _session_args(run)
    run.add_argument("--detach", action="store_true", help="start and return at once")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    run.add_argument("--id", dest="workflow_id", default=None, help="workflow id to use")

    status = sub.add_parser("status", help="show a session's stage, iterations and result")
    status.add_argument("session_id")
    status.add_argument("--json", action="store_true")

    train = sub.add_parser("train", help="one training run with a reward file (no LLM, no server)")
    train.add_argument("reward_file", type=Path)
    train.add_argument("--env", required=True, dest="env_id")
    train.add_argument("--timesteps", type=int, default=100_000)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--out", type=Path, default=None, help="output folder (default runs/...)")
    check = sub.add_parser(
        "check-reward",
        help="static check and a short real rollout of a reward file, in the sandbox",
    )
    check.add_argument("file", type=Path)
    check.add_argument("--env", required=True, dest="env_id")
    check.add_argument("--steps", type=int, default=200, help="random-action steps")
    check = sub.add_parser(
        "check-judge",
        help="a session's validation of a judge file, in the sandbox: accepted, or sent back",
    )
    check.add_argument("file", type=Path)
    check.add_argument("--env", required=True, dest="env_id")
    check.add_argument(
        "--criteria", required=True, type=Path, help="JSON file: the criteria, as a session has"
    )
    check.add_argument("--reward", type=Path, default=None, help="reward the episodes carry")
    check.add_argument(
        "--steps", type=int, default=0, help="each episode's length at most (default: the env's)"
    )
    for name, what in STEERING.items():
        steer_cmd = sub.add_parser(name, help=what)
        steer_cmd.add_argument("session_id")
        if name == "approve":
            steer_cmd.add_argument("--reject", action="store_true")
            steer_cmd.add_argument("--note", default="")
        elif name == "feedback":
            steer_cmd.add_argument("text")
        elif name == "abort":
            steer_cmd.add_argument("reason", nargs="?", default="")
        else:
            steer_cmd.add_argument("iterations", type=int)
    suite = sub.add_parser(
        "bench", help="a benchmark: every case of a CSV as a session, pass rates by group"
    )
    suite.add_argument("cases_csv", type=Path, help="env_id,instruction[,category,difficulty]")
    suite.add_argument("--max-parallel", type=int, default=2, help="sessions at once (2)")
    suite.add_argument("--id", dest="benchmark_id", default=None, help="workflow id to use")
    suite.add_argument("--detach", action="store_true", help="start and return at once")
    suite.add_argument("--json", action="store_true", help="print the result as JSON")
    _session_options(suite)
    bench = sub.add_parser(
        "bench-sandbox", help="what the sandbox costs: sandboxed vs in-process unguarded, one run"
    )
    bench.add_argument("--env", default="HalfCheetah-v5", dest="env_id")
    bench.add_argument("--timesteps", type=int, default=50_000, help="PPO steps per run")
    bench.add_argument("--steps", type=int, default=20_000, help="random-action env steps")
    bench.add_argument("--repeats", type=int, default=2)
    bench.add_argument(
        "--reward", default=None, help="a reward file to measure (default: a built-in run-forward)"
    )
    share = sub.add_parser(
        "bench-share", help="two training runs at once, each against its speed alone: fair?"
    )
    share.add_argument(
        "--env",
        default="HalfCheetah-v5",
        dest="env_id",
        help="the env of both runs, or two envs, comma-separated: one run on each",
    )
    share.add_argument("--timesteps", type=int, default=100_000, help="PPO steps per run")
    share.add_argument(
        "--beside",
        action="store_true",
        help="each run beside its evaluator, as a session trains (four children at once)",
    )
    share.add_argument(
        "--workers",
        choices=("one", "two"),
        default="one",
        help="the runs under one train worker's core share, or each under its own worker's",
    )
    bt = sub.add_parser(
        "bench-train", help="our trainer vs a plain SB3 PPO script on the env's reward, one run"
    )
    bt.add_argument("--env", required=True, dest="env_id", help=", ".join(ENV_IDS))
    bt.add_argument("--timesteps", type=int, required=True, help="training steps per side")
    bt.add_argument(
        "--target", type=float, default=None, help="eval return to reach (default: per env)"
    )
    bt.add_argument(
        "--eval-every", type=int, default=None, help="timesteps between evals (default N/10)"
    )
    bt.add_argument("--seed", type=int, default=0)
    bt.add_argument(
        "--candidates",
        type=int,
        default=None,
        metavar="K",
        help="K reward candidates: batched trainer vs per-candidate processes vs plain SB3",
    )
    bt.add_argument(
        "--procs", type=int, default=None, help="with --candidates: processes (default: cores)"
    )
    bt.add_argument(
        "--sides",
        default=None,
        help="with --candidates: batched,per_candidate,plain (default: all three)",
    )
    bt.add_argument(
        "--ppo",
        type=json.loads,
        default=None,
        metavar="JSON",
        help="with --candidates: our trainers' PPO settings over the preset (JSON object)",
    )
    bt.add_argument(
        "--device",
        choices=("cpu", "cuda", "auto"),
        default="cpu",
        help="our batched side's networks and update: cpu, cuda, or auto (cuda where torch "
        "sees it); with a GPU the same side also runs on the CPU beside it",
    )
    lessons_parser(sub)
    play_parser(sub)
    sessions_parser(sub)
    return p


def _session_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt")
    p.add_argument("--env", required=True, dest="env_id", help=", ".join(ENV_IDS))
    _session_options(p)


def _session_options(p: argparse.ArgumentParser) -> None:
    """The options of a session (`run`), which `bench` applies to every case."""
    p.add_argument(
        "--timesteps",
        type=int,
        default=None,
        help="training steps per run of the first iteration (default: the body's budget)",
    )
    p.add_argument("--max-iterations", type=int, default=None)
    p.add_argument("--seeds", type=int, default=None, help="training runs per iteration")
    p.add_argument(
        "--min-training-steps",
        type=int,
        default=None,
        help="a PPO run stops once a checkpoint passes, from this many steps on (default 50000)",
    )
    p.add_argument("--llm", dest="llm_model", default=None, help="model name, or 'offline'")
    p.add_argument("--candidates", type=int, default=None, help="reward candidates per iteration")
    p.add_argument(
        "--configs", type=int, default=None, help="PPO hyperparameter configs per candidate"
    )
    p.add_argument("--algo", choices=("ppo", "sac", "td3"), default=None, help="default ppo")
    p.add_argument(
        "--accelerator",
        choices=("any", "gpu", "cpu"),
        default=None,
        help="train on GPU workers (`worker train --gpu`), CPU workers, or any (default: the "
        "first free one)",
    )
    p.add_argument(
        "--approval",
        choices=("none", "first", "every"),
        default=None,
        help="wait for `policyforge approve ID` before training (the first or every iteration)",
    )
    p.add_argument(
        "--warm-start",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start each revision from the best policy so far where the new reward values it "
        "(default for PPO; --no-warm-start trains every iteration from scratch)",
    )
    p.add_argument(
        "--max-llm-cost",
        type=float,
        default=None,
        dest="max_llm_cost_usd",
        help="end the session when LLM spend reaches this many USD",
    )
    p.add_argument(
        "--max-training-minutes",
        type=float,
        default=None,
        help="end the session when training has used this many minutes",
    )
    p.add_argument(
        "--eval-steps",
        type=int,
        default=None,
        dest="eval_max_steps",
        help="steps of the judged evaluation rollout (default: the env's episode length)",
    )


# SessionInput fields set by `run` options whose dest is the field's name (None: not given).
SESSION_FIELDS = (
    "max_iterations",
    "seeds",
    "min_training_steps",
    "eval_max_steps",
    "candidates",
    "configs",
    "algo",
    "accelerator",
    "approval",
    "warm_start",
    "max_llm_cost_usd",
    "max_training_minutes",
)


def session_input(args: argparse.Namespace) -> dict[str, Any]:
    """The SessionInput fields `run` was given; the rest keep the workflow's defaults."""
    return {"prompt": args.prompt, "env_id": args.env_id, **session_options(args)}


def session_options(args: argparse.Namespace) -> dict[str, Any]:
    """The session options given (the model always: the default one when none was)."""
    from activities.llm.provider import default_model

    data: dict[str, Any] = {"llm_model": args.llm_model or default_model()}
    given = {"total_timesteps": args.timesteps, **{f: getattr(args, f) for f in SESSION_FIELDS}}
    data.update((field, value) for field, value in given.items() if value is not None)
    return data


def _steering_update(args: argparse.Namespace) -> Coroutine[Any, Any, str]:
    """The update a steering command sends to its session."""
    from workers.cli import sessions

    if args.command == "approve":
        return sessions.approve(args.session_id, reject=args.reject, note=args.note)
    if args.command == "feedback":
        return sessions.give_feedback(args.session_id, args.text)
    if args.command == "abort":
        return sessions.abort(args.session_id, args.reason)
    return sessions.extend(args.session_id, args.iterations)


def main(argv: list[str] | None = None) -> None:
    """The `policyforge` entry point: run one command, then end the process with its status."""
    from workers.process_exit import run_and_exit

    run_and_exit(lambda: _main(argv))


def _main(argv: list[str] | None) -> None:
    from activities.sandbox.os_limits import mark_not_dumpable

    # The CLI may hold provider keys: no same-uid process may read its memory or environ.
    mark_not_dumpable()
    args = _parser().parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    if args.command not in ("dev", "demo"):
        from workers.dev.dev_record import apply_record

        # Where a running `policyforge dev` listens, for what the settings leave out: links
        # then open what runs. `ui` serves a dashboard of its own.
        apply_record(os.environ, dashboard=args.command != "ui")
    from workers.logs import configure_logging
    from workers.settings import Settings

    settings = Settings()
    # The CLI's own output is for people; JSON logs go to stderr at warning and above. Only the
    # commands that host workers log at the configured level (demo sends its logs to a file).
    configure_logging(
        settings.log_level if args.command in ("dev", "worker", "demo", "ui") else "warning"
    )
    import asyncio

    from workers.client import NoServerError

    try:
        if args.command == "dev":
            from workers.dev.main import run_dev

            run_dev(settings, dashboard=not args.no_dashboard)
        elif args.command == "ui":
            from dataclasses import replace

            from workers.dashboard.server import run_ui

            given = {"dashboard_host": args.host, "dashboard_port": args.port}
            run_ui(replace(settings, **{k: v for k, v in given.items() if v is not None}))
        elif args.command == "worker":
            from workers.pools.main import run_pool_process

            run_pool_process(args.pools, gpu=args.gpu)
        elif args.command == "demo":
            from workers.dev.demo import run_demo

            sys.exit(run_demo(settings, args.timesteps, args.out))
        elif args.command == "run":
            from workers.cli.input_checks import check_session_input
            from workers.cli.sessions import start_and_follow

            data = session_input(args)
            check_session_input(data)
            result = asyncio.run(
                start_and_follow(
                    data, workflow_id=args.workflow_id, detach=args.detach, as_json=args.json
                )
            )
            # Scripts can tell a session that ran but did not pass from one that passed.
            sys.exit(0 if result is None or result.passed else 1)
        elif args.command == "status":
            from workers.cli.sessions import show_status

            asyncio.run(show_status(args.session_id, args.json))
        elif args.command == "train":
            from workers.cli.local_commands import cmd_train

            cmd_train(args)
        elif args.command in ("check-reward", "check-judge"):
            from workers.cli.local_commands import cmd_check

            cmd_check(args)
        elif args.command in STEERING:
            from workers.cli.sessions import SteeringRefused

            try:
                from workflows.contracts.shown import shown

                print(shown(asyncio.run(_steering_update(args))))
            except SteeringRefused as exc:
                raise SystemExit(f"error: {exc}") from None
        elif args.command == "bench":
            from workers.cli.bench import cmd_bench

            cmd_bench(args, session_options(args))
        elif args.command == "bench-sandbox":
            from workers.cli.local_commands import cmd_bench_sandbox

            cmd_bench_sandbox(args)
        elif args.command == "bench-share":
            from workers.cli.local_commands import cmd_bench_share

            cmd_bench_share(args)
        elif args.command == "bench-train":
            from workers.cli.local_commands import cmd_bench_train

            cmd_bench_train(args)
        elif args.command == "lessons":
            from workers.cli.lessons import cmd_lessons

            cmd_lessons(args)
        elif args.command == "play":
            from workers.cli.play import cmd_play

            cmd_play(args)
        elif args.command == "sessions":
            from workers.cli.session_list import cmd_sessions

            cmd_sessions(args)
    except NoServerError as exc:
        raise SystemExit(f"error: {exc}") from None
    except KeyboardInterrupt:
        if args.command == "run":
            print("\ndetached; the session goes on. Follow it with `policyforge status ID`.")
        sys.exit(130)


if __name__ == "__main__":
    main()
