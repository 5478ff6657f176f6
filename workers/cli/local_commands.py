"""The CLI side of the commands that need no server: `train`, `check-reward` / `check-judge`,
`bench-sandbox`, `bench-share` and `bench-train`.

Each checks its arguments (one-line errors), calls the work in `workers/local/`, and prints
what came back; the benches end with one JSON line for scripts. What the sandbox sends back
(term and criteria names, the judge's diagnosis, errors that quote the code) is generated text:
printed through `shown`, never as markup (workers/cli/render.py's `say`).
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console

from workers.cli.input_checks import env_errors, exit_on
from workers.cli.render import say
from workflows.contracts.keys import MODEL, TRAJECTORY, VECNORMALIZE, VIDEO
from workflows.contracts.shown import shown


def cmd_train(args: argparse.Namespace) -> None:
    """`policyforge train`: one local training run with a reward file, progress as it goes."""
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
            errors.append(shown(exc))
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
        raise SystemExit(f"error: {shown(exc)}") from None
    console.print(f"done in {summary.get('wall_seconds', 0):.0f}s; outputs in {out}/")
    for name in (MODEL, VECNORMALIZE, VIDEO, TRAJECTORY):
        if (out / name).exists():
            console.print(f"  {out / name}")


def cmd_check(args: argparse.Namespace) -> None:
    """`policyforge check-reward` / `check-judge`: a reward file's static check and a short
    random rollout in the sandbox (its term magnitudes); a judge file's validation as a session
    runs it (accepted, exit 0, or sent back with the reason, exit 1)."""
    if args.command == "check-judge":
        _check_judge(args)
        return
    import tempfile

    from workers.local.checks import CheckFailed, check_reward

    exit_on(env_errors(args.env_id))
    if args.steps <= 0:
        raise SystemExit(f"error: --steps: must be a positive integer (got {args.steps})")
    console = Console(soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="pf-check-") as scratch:
        try:
            out = check_reward(args.file, args.env_id, args.steps, Path(scratch))
        except CheckFailed as exc:
            raise SystemExit(f"error: {shown(exc)}") from None
    say(console, f"{shown(args.file)}: OK on {args.env_id} ({out['steps']} random-action steps)")
    _layers(console, out)
    say(console, "  term              mean |value| per step")
    for name, value in out["term_magnitudes"].items():
        say(console, f"  {shown(name):<17} {value:.4g}")


def _layers(console: Console, out: dict[str, Any]) -> None:
    from activities.sandbox.layers import describe

    layers = describe(out.get("sandbox", []), out.get("sandbox_missing", {}))
    say(console, f"  sandbox layers: {shown(layers)}")


def _check_judge(args: argparse.Namespace) -> None:
    """`policyforge check-judge FILE --env ENV --criteria FILE.json`: exactly a session's
    validation of judge code; `accepted` (exit 0) or `sent back: <reason>` (exit 1)."""
    import tempfile

    from activities.training.judge_validation import is_contrast
    from workers.local.checks import CheckFailed, check_judge, read_criteria

    errors = env_errors(args.env_id)
    if args.steps < 0:
        errors.append(f"--steps: must be 0 (the env's length) or more (got {args.steps})")
    if not args.file.is_file():
        errors.append(f"FILE: {shown(args.file)} does not exist")
    if not args.criteria.is_file():
        errors.append(f"--criteria: {shown(args.criteria)} does not exist")
    if args.reward is not None and not args.reward.is_file():
        errors.append(f"--reward: {shown(args.reward)} does not exist")
    exit_on(errors)
    console = Console(soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="pf-check-") as scratch:
        try:
            criteria = read_criteria(args.criteria, args.env_id)
            out = check_judge(
                args.file, args.env_id, criteria, Path(scratch), args.reward, args.steps
            )
        except CheckFailed as exc:
            if not exc.code_fault:
                raise SystemExit(f"error: {shown(exc)}") from None
            say(console, f"sent back: {shown(exc)}")
            raise SystemExit(1) from None
    if out["problem"] is not None:
        say(console, f"sent back: {shown(out['problem'])}")
    else:
        say(console, "accepted")
    for episode in out["episodes"]:
        mark = "must not pass" if is_contrast(episode, criteria) else "values cross-checked"
        say(console, f"  {shown(episode['what'])}: {mark}")
    _layers(console, out)
    if out["problem"] is not None:
        raise SystemExit(1)


def cmd_bench_share(args: argparse.Namespace) -> None:
    """`policyforge bench-share`: two training runs at once against each one alone."""
    import asyncio

    from workers.local.bench_share import Mode, bench_share, report

    names = [name.strip() for name in args.env_id.split(",")]
    if len(names) > 2:
        exit_on([f"--env: {len(names)} envs given; give one env, or two separated by a comma"])
    for name in names:
        exit_on(env_errors(name))
    env_ids = (names[0], names[-1])
    console = Console(soft_wrap=True)
    mode: Mode = "worker" if args.workers == "one" else "workers"
    runs = " and ".join(dict.fromkeys(env_ids))
    console.print(f"{runs}: {args.timesteps:,} steps per run, alone and then together")
    speeds = asyncio.run(bench_share(env_ids, args.timesteps, mode, with_eval=args.beside))
    for line in report(env_ids, mode, speeds, with_eval=args.beside):
        console.print(line)


def cmd_bench_sandbox(args: argparse.Namespace) -> None:
    """`policyforge bench-sandbox`: env and training throughput with and without the sandbox."""
    import json

    from workers.local.bench_sandbox import bench

    errors = env_errors(args.env_id)
    source = None
    if args.reward is not None:
        try:
            source = Path(args.reward).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"--reward: cannot read {args.reward}: {exc}")
    exit_on(errors)
    console = Console(soft_wrap=True)
    console.print(
        f"{args.env_id}: {args.repeats} x (random steps {args.steps:,}, PPO {args.timesteps:,} "
        "steps), the built-in reward guarded and unguarded alternating; medians:"
    )
    out = bench(args.env_id, args.timesteps, args.steps, args.repeats, reward_source=source)
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
    cost = out["reward"]
    whose = args.reward or "the built-in reward"
    console.print(
        f"  {whose} in guarded training ({cost['train_steps_per_s']:,.0f} steps/s): "
        f"{cost['calls_us_per_step']:.1f} us per step in its calls (beside the physics), "
        f"{cost['wait_pct_of_run']:.1f}% of the run waiting for it"
    )
    print(json.dumps(out))


def cmd_bench_train(args: argparse.Namespace) -> None:
    """`policyforge bench-train`: our trainer against a plain SB3 script on the env's reward,
    an eval line as each side goes, then the comparison table."""
    import json

    from activities.runner.protocol import ChildFailed
    from workers.local.bench_train import BenchError, bench, table

    errors = env_errors(args.env_id)
    if args.timesteps <= 0:
        errors.append(f"--timesteps: must be a positive integer (got {args.timesteps})")
    if args.eval_every is not None and args.eval_every <= 0:
        errors.append(f"--eval-every: must be a positive integer (got {args.eval_every})")
    if args.candidates is not None and args.candidates <= 0:
        errors.append(f"--candidates: must be a positive integer (got {args.candidates})")
    exit_on(errors)
    if args.candidates is not None:
        _bench_candidates(args)
        return
    console = Console(soft_wrap=True)
    every = args.eval_every or max(1, args.timesteps // 10)
    console.print(
        f"{args.env_id}: {args.timesteps:,} steps each, ours then plain SB3, seed {args.seed}; "
        f"one deterministic episode every {every:,} steps (env's own return)"
    )

    def on_eval(side: str, ev: dict[str, Any]) -> None:
        console.print(
            f"  {side:<8} {ev['timesteps']:>10,} steps  eval return {ev['eval_return']:>10,.1f}"
            f"  train wall {ev['train_wall_s']:>7,.1f} s"
        )

    try:
        out = bench(
            args.env_id, args.timesteps, args.target, every, args.seed, on_eval, device=args.device
        )
    except (BenchError, ChildFailed) as exc:
        raise SystemExit(f"error: {exc}") from None
    for line in table(out):
        console.print("  " + line, highlight=False)
    print(json.dumps(out))


def _bench_candidates(args: argparse.Namespace) -> None:
    """`bench-train --candidates K`: batched, per-candidate and plain SB3 on K candidates."""
    import json

    from activities.runner.protocol import ChildFailed
    from workers.local.bench_candidates import SIDES, bench_candidates, table
    from workers.local.bench_train import BenchError

    console = Console(soft_wrap=True)
    sides = tuple(s.strip() for s in args.sides.split(",")) if args.sides else SIDES
    try:
        out = bench_candidates(
            args.env_id,
            args.timesteps,
            args.candidates,
            target=args.target,
            eval_every=args.eval_every,
            seed=args.seed,
            procs=args.procs,
            sides=sides,
            ppo=args.ppo,
            device=args.device,
            say=lambda line: console.print("  " + line, highlight=False),
        )
    except (BenchError, ChildFailed) as exc:
        raise SystemExit(f"error: {exc}") from None
    for line in table(out):
        console.print("  " + line, highlight=False)
    print(json.dumps(out))
