"""`policyforge bench-sandbox`: what the sandbox costs, side by side in one run.

The same reward function ("run forward": x velocity minus 0.1 |a|^2, or the file given) runs
guarded (the sandbox: a separate, confined process, with the Python layers and runtime guards
inside) and unguarded (plain exec in the runner, called directly, as reward-design tools
usually do), alternating, for (a) random-action env steps (validation: scored in one call at the
end), which isolates the per-transition cost, and (b) PPO training on the engine, which is what
a session pays: its rows go to the sandbox a chunk at a time while the physics steps on, so the
run waits only for the last chunk of each rollout. For (b) the guarded side also reports where
the reward's time goes: the calls' own time per step (serialising the rows, the sandbox's
round trip, the code and its primitives) and the share of the run's wall time spent waiting.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from activities.runner.baseline_reward import RUN_FORWARD
from activities.runner.protocol import ChildJob, ChildRequest
from activities.runner.supervisor import run_child
from activities.training import job
from workers.local.train import _run_sync


def _one(mode: ChildJob, req: ChildRequest) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pf-bench-sandbox-") as tmp:
        return _run_sync(lambda: run_child(mode, req, Path(tmp), stall_s=600))


def bench(
    env_id: str,
    timesteps: int,
    steps: int,
    repeats: int,
    seed: int = 0,
    reward_source: str | None = None,
) -> dict[str, Any]:
    """Median steps/s guarded and unguarded over `repeats` alternating runs of the built-in
    reward, for random env steps and for PPO training, with the overhead in percent; and the
    reward's cost in guarded training (`reward_source`'s, else the built-in's): the calls'
    microseconds per step and the share of the run spent waiting for them. Generated code
    never runs unguarded: a given reward is measured in its sandbox only."""
    rows: dict[str, dict[str, list[float]]] = {
        "env_steps_per_s": {"unguarded": [], "guarded": []},
        "train_steps_per_s": {"unguarded": [], "guarded": []},
    }
    costs: list[dict[str, Any]] = []
    for r in range(repeats):
        # Alternate which goes first so that drift on a noisy machine hits both alike.
        order = ("unguarded", "guarded") if r % 2 == 0 else ("guarded", "unguarded")
        for variant in order:
            common: dict[str, Any] = {
                "env_id": env_id,
                "reward_source": RUN_FORWARD,
                "seed": seed,
                "unguarded": variant == "unguarded",
            }
            steps_out = _one(job.VALIDATE, ChildRequest(**common, steps=steps))
            rows["env_steps_per_s"][variant].append(steps_out["steps"] / steps_out["seconds"])
            train_out = _one(job.TRAIN, ChildRequest(**common, timesteps=timesteps))
            rows["train_steps_per_s"][variant].append(float(train_out["steps_per_second"]))
            if variant == "guarded" and reward_source is None:
                costs.append(train_out)
        if reward_source is not None:
            given: dict[str, Any] = {"env_id": env_id, "reward_source": reward_source, "seed": seed}
            costs.append(_one(job.TRAIN, ChildRequest(**given, timesteps=timesteps)))
    out: dict[str, Any] = {"env_id": env_id, "timesteps": timesteps, "steps": steps}
    for metric, by_variant in rows.items():
        plain, guarded = median(by_variant["unguarded"]), median(by_variant["guarded"])
        out[metric] = {
            "unguarded": round(plain, 1),
            "guarded": round(guarded, 1),
            "overhead_pct": round(100 * (plain - guarded) / plain, 2),
        }
    out["reward"] = {
        "source": "given" if reward_source is not None else "built-in",
        "train_steps_per_s": round(median(float(c["steps_per_second"]) for c in costs), 1),
        "calls_us_per_step": round(median(_calls_us(c) for c in costs), 1),
        "wait_pct_of_run": round(median(_wait_pct(c) for c in costs), 2),
    }
    return out


def _calls_us(summary: dict[str, Any]) -> float:
    """The reward calls' own time per training step (most of it beside the physics)."""
    scoring = float(summary["engine"]["seconds"].get("scoring", 0.0))
    return 1e6 * scoring / max(int(summary["timesteps_done"]), 1)


def _wait_pct(summary: dict[str, Any]) -> float:
    """The share of the run's wall time it waited for its rewards."""
    waited = float(summary["engine"]["seconds"]["reward"])
    return 100 * waited / max(float(summary["wall_seconds"]), 1e-9)
