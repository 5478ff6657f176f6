"""The `policyforge` command line: services, sessions and their steering, local checks."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console

from workflows.contracts.keys import MODEL, TRAJECTORY, VECNORMALIZE, VIDEO
from workflows.contracts.queues import task_queue
from workflows.contracts.session import ENV_IDS, SessionResult, input_errors

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

    sub.add_parser("dev", help="embedded Temporal + S3 and all three worker pools in one process")

    worker = sub.add_parser("worker", help="run one or more worker pools against TEMPORAL_ADDRESS")
    worker.add_argument("pools", nargs="+", choices=["llm", "train", "judge"])

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
    for kind in ("reward", "judge"):
        check = sub.add_parser(
            f"check-{kind}",
            help=f"static check and a short real rollout of a {kind} file, in the sandbox",
        )
        check.add_argument("file", type=Path)
        check.add_argument("--env", required=True, dest="env_id")
        check.add_argument("--steps", type=int, default=200, help="random-action steps")
        if kind == "judge":
            check.add_argument("--reward", type=Path, default=None, help="reward for the episode")
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
    bench = sub.add_parser(
        "bench-sandbox", help="what the sandbox costs: sandboxed vs in-process unguarded, one run"
    )
    bench.add_argument("--env", default="HalfCheetah-v5", dest="env_id")
    bench.add_argument("--timesteps", type=int, default=50_000, help="PPO steps per run")
    bench.add_argument("--steps", type=int, default=20_000, help="random-action env steps")
    bench.add_argument("--repeats", type=int, default=2)
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
    return p


def _session_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt")
    p.add_argument("--env", required=True, dest="env_id", help=", ".join(ENV_IDS))
    p.add_argument("--timesteps", type=int, default=None, help="training budget per iteration")
    p.add_argument("--max-iterations", type=int, default=None)
    p.add_argument("--seeds", type=int, default=None, help="training runs per iteration")
    p.add_argument("--pass-threshold", type=float, default=None)
    p.add_argument("--llm", dest="llm_model", default=None, help="model name, or 'offline'")
    p.add_argument("--candidates", type=int, default=None, help="reward candidates per iteration")
    p.add_argument(
        "--configs", type=int, default=None, help="PPO hyperparameter configs per candidate"
    )
    p.add_argument("--algo", choices=("ppo", "sac", "td3"), default=None, help="default ppo")
    p.add_argument(
        "--approval",
        choices=("none", "first", "every"),
        default=None,
        help="wait for `policyforge approve ID` before training (the first or every iteration)",
    )
    p.add_argument(
        "--warm-start",
        action="store_true",
        default=None,
        help="start each iteration's training from the best policy so far",
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


def env_errors(env_id: str) -> list[str]:
    """The one-line --env error, or none for a known environment."""
    if env_id in ENV_IDS:
        return []
    return [f"--env: unknown environment {env_id!r}; choose one of {', '.join(ENV_IDS)}"]


def exit_on(errors: list[str]) -> None:
    """Bad input ends the command with one line naming every problem."""
    if errors:
        raise SystemExit("error: " + "; ".join(errors))


# SessionInput fields set by `run` options whose dest is the field's name (None: not given).
SESSION_FIELDS = (
    "max_iterations",
    "seeds",
    "pass_threshold",
    "eval_max_steps",
    "candidates",
    "configs",
    "algo",
    "approval",
    "warm_start",
    "max_llm_cost_usd",
    "max_training_minutes",
)


def session_input(args: argparse.Namespace) -> dict[str, Any]:
    from activities.llm.provider import default_model

    data: dict[str, Any] = {
        "prompt": args.prompt,
        "env_id": args.env_id,
        "llm_model": args.llm_model or default_model(),
    }
    given = {"total_timesteps": args.timesteps, **{f: getattr(args, f) for f in SESSION_FIELDS}}
    data.update((field, value) for field, value in given.items() if value is not None)
    return data


def check_input(data: dict[str, Any]) -> None:
    """Validate before connecting: bad input never reaches the server."""
    from temporalio.exceptions import ApplicationError

    from activities.llm.provider import check_model, is_offline

    errors = input_errors(data)
    if not errors and is_offline(data["llm_model"]):
        from activities.llm.offline import match_intent

        try:
            match_intent(data["prompt"], data["env_id"])
        except ApplicationError as exc:
            errors.append(f"prompt: {exc.message}")
    elif not errors:
        try:
            check_model(data["llm_model"])  # unknown model, or its key is not set
        except ApplicationError as exc:
            message = exc.message
            errors.append(message if message.startswith("llm_model") else f"--llm: {message}")
    exit_on(errors)


def workflow_id_for(prompt: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", prompt.lower()).strip("-")[:32].strip("-")
    return f"pf-{slug}-{uuid.uuid4().hex[:8]}"


async def start_and_follow(
    data: dict[str, Any], *, workflow_id: str | None, detach: bool, as_json: bool
) -> SessionResult | None:
    from temporalio.client import WorkflowFailureError

    from workers.client import connect
    from workers.settings import Settings
    from workers.watch import follow, report

    settings = Settings()
    console = Console(stderr=as_json, soft_wrap=True)
    client = await connect(settings)
    wid = workflow_id or workflow_id_for(data["prompt"])
    if settings.queue_prefix != "policyforge":
        data = {**data, "queue_prefix": settings.queue_prefix}
    handle = await client.start_workflow(
        "SessionWorkflow",
        data,
        id=wid,
        task_queue=task_queue("llm", settings.queue_prefix),
        result_type=SessionResult,
    )
    console.print(f"session {wid} started  ({settings.ui_link(wid)})")
    if detach:
        console.print(f"follow it with: policyforge status {wid}")
        return None
    try:
        result = await follow(handle, console)
    except WorkflowFailureError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        raise SystemExit(f"error: session {wid} failed: {message}") from None
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        from activities.artifacts import bucket_name

        report(result, console, bucket_name(), settings.ui_link(wid))
    return result


async def show_status(session_id: str, as_json: bool) -> None:
    from temporalio.client import WorkflowExecutionStatus

    from workers.client import connect
    from workers.settings import Settings
    from workers.watch import live_timesteps, query_status, report, usage_line

    settings = Settings()
    client = await connect(settings)
    handle = client.get_workflow_handle(session_id, result_type=SessionResult)
    try:
        desc = await handle.describe()
    except Exception as exc:  # noqa: BLE001 - RPCError NOT_FOUND and friends
        raise SystemExit(f"error: no session {session_id!r} on {settings.address}: {exc}") from None
    console = Console(soft_wrap=True)
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        result = await handle.result()
        if as_json:
            print(result.model_dump_json(indent=2))
        else:
            from activities.artifacts import bucket_name

            report(result, console, bucket_name(), settings.ui_link(session_id))
        return
    status = await query_status(handle)
    if status is not None and status.stage == "training":
        # The workflow learns timesteps when a run ends; running runs heartbeat them.
        steps, _ = await live_timesteps(handle)
        if steps is not None:
            status = status.model_copy(update={"timesteps_done": steps})
    if as_json:
        print(status.model_dump_json(indent=2) if status else "null")
        return
    console.print(f"session {session_id}: {desc.status.name.lower() if desc.status else '?'}")
    if status:
        console.print(
            f"  stage {status.stage}, iteration {status.iteration}/{status.max_iterations}, "
            f"author {status.model_label}, best score "
            + (f"{status.best_score:.2f}" if status.best_score is not None else "-")
        )
        if status.stage in ("training", "evaluating", "judging"):
            console.print(f"  timesteps {status.timesteps_done:,} / {status.timesteps_target:,}")
        console.print(f"  {usage_line(status.llm_usage, status.training_seconds)}")
        if status.awaiting_approval is not None:
            console.print(
                f"  waiting for approval of iteration {status.awaiting_approval}: "
                f"policyforge approve {session_id}  (or --reject --note ...)"
            )
            for reward in status.pending_rewards:
                console.print(f"    {reward.key}  {reward.latex}")
        if status.feedback_pending:
            console.print(f"  feedback waiting for the next revision: {status.feedback_pending}")
        for error in status.signal_errors[-3:]:
            console.print(f"  {error}")
        for rec in status.iterations:
            console.print(f"  iter {rec.iteration}: score {rec.score:.2f}  {rec.diagnosis}")
    console.print(f"  {settings.ui_link(session_id)}")


def cmd_train(args: argparse.Namespace) -> None:
    from activities.training.reward_runtime import RewardLoadError
    from workers.local.train import check_reward_file, train_local

    errors = env_errors(args.env_id)
    if args.timesteps <= 0:
        errors.append(f"--timesteps: must be a positive integer (got {args.timesteps})")
    if not args.reward_file.is_file():
        errors.append(f"reward file {args.reward_file} does not exist")
    else:
        try:
            check_reward_file(args.reward_file)
        except RewardLoadError as exc:
            errors.append(str(exc))
    exit_on(errors)
    out = args.out or Path("runs") / f"{args.reward_file.stem}-{args.env_id}-{uuid.uuid4().hex[:6]}"
    console = Console(soft_wrap=True)
    console.print(f"training {args.env_id} for {args.timesteps:,} steps with {args.reward_file}")

    def on_progress(steps: int, mean_return: float | None) -> None:
        ret = f"  mean return {mean_return:.1f}" if mean_return is not None else ""
        console.print(f"  {steps:>9,} / {args.timesteps:,} steps{ret}")

    try:
        summary = train_local(
            args.reward_file, args.env_id, args.timesteps, args.seed, out, on_progress
        )
    except RewardLoadError as exc:
        raise SystemExit(f"error: {exc}") from None
    console.print(f"done in {summary.get('wall_seconds', 0):.0f}s; outputs in {out}/")
    for name in (MODEL, VECNORMALIZE, VIDEO, TRAJECTORY):
        if (out / name).exists():
            console.print(f"  {out / name}")


async def steer(args: argparse.Namespace) -> str:
    """One update on a running session; its answer, or the validator's reason as an error."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    from workers.client import connect
    from workers.settings import Settings
    from workflows.contracts.steering import ApprovalDecision
    from workflows.session import SessionWorkflow

    client = await connect(Settings())
    handle = client.get_workflow_handle(args.session_id)
    try:
        if args.command == "approve":
            decision = ApprovalDecision(approve=not args.reject, note=args.note)
            return await handle.execute_update(SessionWorkflow.approve_reward, decision)
        if args.command == "feedback":
            return await handle.execute_update(SessionWorkflow.give_feedback, args.text)
        if args.command == "abort":
            return await handle.execute_update(SessionWorkflow.abort, args.reason)
        return await handle.execute_update(SessionWorkflow.extend, args.iterations)
    except WorkflowUpdateFailedError as exc:
        cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
        raise SystemExit(f"error: {args.command} refused: {cause}") from None
    except RPCError as exc:
        raise SystemExit(f"error: session {args.session_id!r}: {exc.message}") from None


def cmd_check(args: argparse.Namespace) -> None:
    import tempfile

    from workers.local.checks import CheckFailed, check_judge, check_reward

    exit_on(env_errors(args.env_id))
    if args.steps <= 0:
        raise SystemExit(f"error: --steps: must be a positive integer (got {args.steps})")
    console = Console(soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="pf-check-") as scratch:
        try:
            if args.command == "check-reward":
                out = check_reward(args.file, args.env_id, args.steps, Path(scratch))
            else:
                out = check_judge(args.file, args.env_id, args.steps, Path(scratch), args.reward)
        except CheckFailed as exc:
            raise SystemExit(f"error: {exc}") from None
    from activities.sandbox.layers import describe

    console.print(f"{args.file}: OK on {args.env_id} ({out['steps']} random-action steps)")
    console.print(
        "  sandbox layers: " + describe(out.get("sandbox", []), out.get("sandbox_missing", {}))
    )
    if args.command == "check-reward":
        console.print("  term              mean |value| per step")
        for name, value in out["term_magnitudes"].items():
            console.print(f"  {name:<17} {value:.4g}")
    else:
        judged = out["judgment"]
        console.print(f"  score {judged['score']:.3f} on a random policy: {judged['diagnosis']}")
        for name, value in judged["criteria"].items():
            console.print(f"  {name:<17} {value:.3f}")


def cmd_bench_sandbox(args: argparse.Namespace) -> None:
    import json

    from workers.local.bench_sandbox import bench

    exit_on(env_errors(args.env_id))
    console = Console(soft_wrap=True)
    console.print(
        f"{args.env_id}: {args.repeats} x (random steps {args.steps:,}, PPO {args.timesteps:,} "
        "steps), guarded and unguarded alternating; medians:"
    )
    out = bench(args.env_id, args.timesteps, args.steps, args.repeats)
    console.print(f"  {'':<26}{'unguarded':>12}{'guarded':>12}{'overhead':>10}")
    for metric, label in (
        ("env_steps_per_s", "env steps/s (random)"),
        ("train_steps_per_s", "PPO training steps/s"),
    ):
        row = out[metric]
        console.print(
            f"  {label:<26}{row['unguarded']:>12,.0f}{row['guarded']:>12,.0f}"
            f"{row['overhead_pct']:>9.1f}%"
        )
    print(json.dumps(out))


def cmd_bench_train(args: argparse.Namespace) -> None:
    import json

    from activities.runner.protocol import ChildFailed
    from workers.local.bench_train import BenchError, bench, table

    errors = env_errors(args.env_id)
    if args.timesteps <= 0:
        errors.append(f"--timesteps: must be a positive integer (got {args.timesteps})")
    if args.eval_every is not None and args.eval_every <= 0:
        errors.append(f"--eval-every: must be a positive integer (got {args.eval_every})")
    exit_on(errors)
    console = Console(soft_wrap=True)
    every = args.eval_every or max(1, args.timesteps // 10)
    console.print(
        f"{args.env_id}: {args.timesteps:,} steps each, ours then plain SB3, seed {args.seed}; "
        f"one deterministic episode every {every:,} steps (env's own return)"
    )

    def on_eval(side: str, ev: dict[str, Any]) -> None:
        console.print(
            f"  {side:<5} {ev['timesteps']:>10,} steps  eval return {ev['eval_return']:>10,.1f}"
            f"  train wall {ev['train_wall_s']:>7,.1f} s"
        )

    try:
        out = bench(args.env_id, args.timesteps, args.target, every, args.seed, on_eval)
    except (BenchError, ChildFailed) as exc:
        raise SystemExit(f"error: {exc}") from None
    for line in table(out):
        console.print("  " + line, highlight=False)
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> None:
    from workers.process_exit import run_and_exit

    run_and_exit(lambda: _main(argv))


def _main(argv: list[str] | None) -> None:
    from activities.sandbox.os_limits import mark_not_dumpable

    # The CLI may hold provider keys: no same-uid process may read its memory or environ.
    mark_not_dumpable()
    args = _parser().parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    from workers.logs import configure_logging
    from workers.settings import Settings

    settings = Settings()
    # The CLI's own output is for people; JSON logs go to stderr at warning and above. Only the
    # commands that host workers log at the configured level (demo sends its logs to a file).
    configure_logging(
        settings.log_level if args.command in ("dev", "worker", "demo") else "warning"
    )
    from workers.client import NoServerError

    try:
        if args.command == "dev":
            from workers.dev import run_dev

            run_dev(settings)
        elif args.command == "worker":
            from workers.main import run_pool_process

            run_pool_process(args.pools)
        elif args.command == "demo":
            from workers.demo import run_demo

            sys.exit(run_demo(settings, args.timesteps, args.out))
        elif args.command == "run":
            data = session_input(args)
            check_input(data)
            result = asyncio.run(
                start_and_follow(
                    data, workflow_id=args.workflow_id, detach=args.detach, as_json=args.json
                )
            )
            # Scripts can tell a session that ran but did not pass from one that passed.
            sys.exit(0 if result is None or result.passed else 1)
        elif args.command == "status":
            asyncio.run(show_status(args.session_id, args.json))
        elif args.command == "train":
            cmd_train(args)
        elif args.command in ("check-reward", "check-judge"):
            cmd_check(args)
        elif args.command in STEERING:
            print(asyncio.run(steer(args)))
        elif args.command == "bench-sandbox":
            cmd_bench_sandbox(args)
        elif args.command == "bench-train":
            cmd_bench_train(args)
    except NoServerError as exc:
        raise SystemExit(f"error: {exc}") from None
    except KeyboardInterrupt:
        if args.command == "run":
            print("\ndetached; the session goes on. Follow it with `policyforge status ID`.")
        sys.exit(130)


if __name__ == "__main__":
    main()
