"""`policyforge bench-train`: our trainer against a plain Stable-Baselines3 script, one run.

Both train on the env's own reward, one after the other (never at once: the figures are
wall-clock), and are evaluated by the same `evaluation.PeriodicEval`: after the first PPO update
at or past each multiple of `eval_every` timesteps and at the end, one full deterministic
episode of the env's own return, reset with the same seed, its time kept off the training
clock. Both sides update every 2048 samples (16 x 128 ours, SB3's n_steps 2048 plain), so
they are evaluated at the same timesteps.

- ours: the real confined child (`run_child(job.TRAIN, ...)`): our preset on the batched
  engine (a batch of one, physics and update on every core), and a sandboxed reward file that
  rebuilds the env's reward from its info dict (checked against the env's reward before
  training). With a GPU `device` its networks and update run there, and the side runs again
  on the CPU (`ours_cpu`), so that both figures come from one invocation.
- plain: `python -m workers.local.bench_plain`: `PPO("MlpPolicy", gym.make(env_id))`
  with SB3's defaults (one env, no VecNormalize, torch's default threads), no sandbox.

First the env's bare physics is stepped on one process (workers/local/bench_physics.py): the
ceiling each side's steps/s is shown as a share of. Figures per side: steps/s (timesteps /
training wall, evaluations excluded), the final
evaluation's return, and the training wall time at the first evaluation whose return reached
the target. The default targets (`DEFAULT_TARGETS`) are chosen as a clear sign of learning
that our presets reach within a few hundred thousand steps on one core, not as "solved"
scores: e.g. HalfCheetah 1500 (a random policy scores about -300), Ant 1000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import REPO_ROOT, repo_pythonpath, run_child
from activities.training import job
from activities.training.cores import cores
from workers.local.bench_physics import bare_physics, physics_line, share
from workers.local.train import _run_sync

# Target evaluation returns (env's own reward, one deterministic episode).
DEFAULT_TARGETS: dict[str, float] = {
    "HalfCheetah-v5": 1500.0,
    "Ant-v5": 1000.0,
    "Hopper-v5": 1000.0,
    "Walker2d-v5": 1000.0,
    "Humanoid-v5": 1000.0,
    "HumanoidStandup-v5": 80000.0,
    "Swimmer-v5": 50.0,
    "Reacher-v5": -10.0,
    "InvertedPendulum-v5": 1000.0,
    "InvertedDoublePendulum-v5": 9000.0,
}

# Where an env's reward is not just the sum of its info["reward_*"] entries: HumanoidStandup
# adds a constant 1 that is in no info entry; InvertedDoublePendulum names its penalties
# "*_penalty".
_EXTRA_KEYS: dict[str, tuple[str, ...]] = {
    "InvertedDoublePendulum-v5": ("distance_penalty", "velocity_penalty"),
}
_CONSTANT: dict[str, float] = {"HumanoidStandup-v5": 1.0}

REWARD_FILENAME = "env_reward.py"
_REWARD_TEMPLATE = '''"""The env's own reward, rebuilt from its info dict (by bench-train)."""

EXTRA_KEYS = {extra_keys!r}
CONSTANT = {constant!r}


def reward_fn(obs, action, next_obs, info):
    terms = {{}}
    for key, value in info.items():
        if (key.startswith("reward_") and key != "reward_terms") or key in EXTRA_KEYS:
            terms[key] = float(value)
    if not terms:
        raise ValueError("the env reports no reward_* entries in info: cannot rebuild its reward")
    if CONSTANT:
        terms["constant"] = CONSTANT
    return sum(terms.values()), terms
'''

OnEval = Callable[[str, dict[str, Any]], None]


class BenchError(RuntimeError):
    """The bench cannot run or a side failed; the message is one line."""


def bench_device(device: str) -> str:
    """The batched side's torch device as the training child names it ("cpu", "cuda:0");
    BenchError naming --device where it cannot be used (a GPU torch does not see)."""
    from activities.training.batched.device import DeviceError, resolve_device

    try:
        return str(resolve_device(device, "--device"))
    except DeviceError as exc:
        raise BenchError(str(exc)) from None


def reward_source(env_id: str) -> str:
    """The reward file that rebuilds the env's own reward from its info dict."""
    return _REWARD_TEMPLATE.format(
        extra_keys=_EXTRA_KEYS.get(env_id, ()), constant=_CONSTANT.get(env_id, 0.0)
    )


def check_reward(env_id: str, steps: int = 200, seed: int = 0, tol: float = 1e-6) -> float:
    """Step the env randomly and compare the rebuilt reward with the env's; the largest gap.

    Raises BenchError when the env has no reward_* entries or the rebuilt reward differs.
    Runs our own constant reward code in this process, unguarded (it is not generated code).
    """
    from activities.training.reward_runtime import RewardLoadError, load_reward
    from activities.training.sim import make_env

    reward = load_reward(reward_source(env_id), REWARD_FILENAME, guarded=False)
    env = make_env(env_id, None)
    env.action_space.seed(seed)
    worst = 0.0
    try:
        obs, _ = env.reset(seed=seed)
        for _ in range(steps):
            action = env.action_space.sample()
            next_obs, env_reward, terminated, truncated, info = env.step(action)
            try:
                rebuilt, _terms = reward(obs, action, next_obs, info)
            except (RewardLoadError, ValueError) as exc:
                raise BenchError(f"{env_id}: {exc}") from None
            worst = max(worst, abs(rebuilt - float(env_reward)))
            obs = next_obs
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    if worst > tol:
        raise BenchError(
            f"{env_id}: the sum of its info reward entries differs from its reward by up to "
            f"{worst:.3g}: bench-train cannot train on the env's own reward"
        )
    return worst


def run_ours(
    env_id: str,
    timesteps: int,
    eval_every: int,
    seed: int,
    out_dir: Path,
    on_eval: OnEval,
    device: str = "cpu",
    side: str = "ours",
) -> dict[str, Any]:
    """Our side: the real confined child trains on the rebuilt reward, evaluating as it goes,
    its networks on `device` ("cpu", "cuda" or "auto"); its evaluations and settings."""
    req = ChildRequest(
        env_id=env_id,
        reward_source=reward_source(env_id),
        reward_filename=REWARD_FILENAME,
        timesteps=timesteps,
        seed=seed,
        eval_every=eval_every,
        threads=cores(),  # a session's single run gets the worker's cores
        device=device,
    )

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "eval":
            on_eval(side, event)

    result = _run_sync(lambda: run_child(job.TRAIN, req, out_dir, on_event, stall_s=600))
    lines = (out_dir / "metrics" / "evals.jsonl").read_text().splitlines()
    evals = [json.loads(line) for line in lines if line.strip()]
    hp = result["hyperparameters"]
    return {
        "evals": evals,
        "timesteps_done": result["timesteps_done"],
        "torch_threads": result["torch_threads"],
        "n_envs": hp["n_envs"],
        "batch": hp["n_envs"] * hp["n_steps"],
        "device": result["engine"]["device"],
    }


def stream_events(cmd: list[str], on_event: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run a bench script in a process of its own: each JSON line but the last to `on_event`,
    its {"event": "result"} line returned (BenchError with its last stderr line otherwise)."""
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    result: dict[str, Any] | None = None
    # stderr to a file (MuJoCo and gymnasium warnings), shown only when the script fails.
    with tempfile.TemporaryFile("w+") as err:
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO_ROOT, env=env
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "result":
                    result = event
                else:
                    on_event(event)
        if proc.returncode != 0 or result is None:
            err.seek(0)
            tail = [ln for ln in err.read().splitlines() if ln.strip()][-1:] or ["no output"]
            raise BenchError(f"{cmd[2]} exited with status {proc.returncode}: {tail[0]}")
    return result


def run_plain(
    env_id: str, timesteps: int, eval_every: int, seed: int, on_eval: OnEval
) -> dict[str, Any]:
    """The plain SB3 side, run as `workers.local.bench_plain` in a process of its own; its
    evaluations and settings."""
    cmd = [sys.executable, "-m", "workers.local.bench_plain", "--env", env_id]
    cmd += ["--timesteps", str(timesteps), "--eval-every", str(eval_every), "--seed", str(seed)]

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "eval":
            on_eval("plain", event)

    result = stream_events(cmd, on_event)
    return {
        "evals": result["evals"],
        "timesteps_done": result["timesteps_done"],
        "torch_threads": result["torch_threads"],
        "n_envs": result["hyperparameters"]["n_envs"],
        "batch": result["hyperparameters"]["n_steps"],
    }


def _figures(side: dict[str, Any], target: float) -> dict[str, Any]:
    """Steps/s, final return and time to target from one side's evaluations."""
    evals = side["evals"]
    if not evals:
        raise BenchError("a run finished without any evaluation")
    last = evals[-1]  # the one at the end of training: its wall is the whole training's
    reached = next((e for e in evals if e["eval_return"] >= target), None)
    return {
        "steps_per_second": round(last["timesteps"] / max(last["train_wall_s"], 1e-9), 1),
        "train_wall_s": last["train_wall_s"],
        "final_eval_return": round(last["eval_return"], 2),
        "final_eval_length": last["eval_length"],
        "time_to_target_s": reached["train_wall_s"] if reached else None,
        "timesteps_to_target": reached["timesteps"] if reached else None,
        "best_eval_return": round(max(e["eval_return"] for e in evals), 2),
        "eval_seconds": round(sum(e["eval_s"] for e in evals), 2),
        **side,
    }


def bench(
    env_id: str,
    timesteps: int,
    target: float | None = None,
    eval_every: int | None = None,
    seed: int = 0,
    on_eval: OnEval | None = None,
    physics_seconds: float = 3.0,
    device: str = "cpu",
) -> dict[str, Any]:
    """The env's bare physics on one process (each side trains on one), then both sides, one
    after the other, and their figures side by side with their share of that physics;
    BenchError when the env's reward cannot be rebuilt or a side fails. `device`: our side's
    ("cpu", "cuda" or "auto"; on a GPU our side runs on the CPU too, as `ours_cpu`)."""

    if timesteps <= 0:
        raise BenchError(f"timesteps must be positive (got {timesteps})")
    every = eval_every or max(1, timesteps // 10)
    goal = target if target is not None else DEFAULT_TARGETS.get(env_id)
    if goal is None:
        raise BenchError(f"{env_id}: no default target; give --target")
    dev = bench_device(device)
    check_reward(env_id, seed=seed)
    report = on_eval or (lambda _side, _event: None)
    physics = bare_physics(env_id, 1, seconds=physics_seconds)
    # The child is asked for "cuda" (not "auto") once a GPU is seen here: it fails rather than
    # fall back to the CPU unseen.
    runs = {"ours": "cpu" if dev == "cpu" else "cuda"}
    if dev != "cpu":
        runs["ours_cpu"] = "cpu"
    sides: dict[str, dict[str, Any]] = {}
    for side, on in runs.items():
        with tempfile.TemporaryDirectory(prefix="pf-bench-train-") as tmp:
            sides[side] = run_ours(env_id, timesteps, every, seed, Path(tmp), report, on, side)
    plain = run_plain(env_id, timesteps, every, seed, report)
    out: dict[str, Any] = {
        "env_id": env_id,
        "timesteps": timesteps,
        "eval_every": every,
        "seed": seed,
        "target": goal,
        "physics": physics,
        "device": dev,
        **{side: _figures(figures, goal) for side, figures in sides.items()},
        "plain": _figures(plain, goal),
    }
    for side in (*sides, "plain"):
        out[side]["physics_share"] = share(out[side]["steps_per_second"], physics)
    out["steps_per_second_ratio"] = round(
        out["ours"]["steps_per_second"] / max(out["plain"]["steps_per_second"], 1e-9), 2
    )
    return out


def table(out: dict[str, Any]) -> list[str]:
    """The side-by-side table, as aligned text lines (a column for `ours_cpu` when our side
    also ran on the CPU beside a GPU)."""
    sides = [s for s in ("ours", "ours_cpu", "plain") if s in out]
    device = out.get("device", "cpu")
    heads = {"ours": "ours" if device == "cpu" else f"ours {device}", "ours_cpu": "ours cpu"}

    def secs(v: float | None) -> str:
        return "not reached" if v is None else f"{v:,.1f}"

    def steps(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"

    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("steps/s (evals excluded)", lambda f: f"{f['steps_per_second']:,.0f}"),
        ("train wall (s)", lambda f: f"{f['train_wall_s']:,.1f}"),
        ("final eval return", lambda f: f"{f['final_eval_return']:,.1f}"),
        ("best eval return", lambda f: f"{f['best_eval_return']:,.1f}"),
        (f"time to {out['target']:g} (s)", lambda f: secs(f["time_to_target_s"])),
        ("timesteps to target", lambda f: steps(f["timesteps_to_target"])),
        ("evaluations", lambda f: str(len(f["evals"]))),
        ("envs x torch threads", lambda f: f"{f['n_envs']} x {f['torch_threads']}"),
        ("share of bare physics", lambda f: f"{f['physics_share']:.0%}"),
    ]
    lines = [f"{'':<26}" + "".join(f"{heads.get(s, 'plain SB3'):>14}" for s in sides)]
    lines += [
        f"{label:<26}" + "".join(f"{cell(out[s]):>14}" for s in sides) for label, cell in rows
    ]
    lines.append(f"steps/s ratio (ours / plain): {out['steps_per_second_ratio']:.2f}")
    lines.append(physics_line(out["physics"]))
    return lines
