"""`policyforge bench-sandbox`: what the sandbox costs, side by side in one run.

The same reward function ("run forward": x velocity minus 0.1 |a|^2) runs guarded (the
sandbox: a separate, confined process reached by one round trip per vector step, with the
Python layers and runtime guards inside) and unguarded (plain exec in the runner, called
directly, as reward-design tools usually do), alternating, for (a) random-action env steps
(validation: scored in one call at the end), which isolates the per-transition cost, and (b) PPO
training (a call per rollout), which is what a session pays.
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


def bench(env_id: str, timesteps: int, steps: int, repeats: int, seed: int = 0) -> dict[str, Any]:
    """Median steps/s guarded and unguarded over `repeats` alternating runs, for random env
    steps and for PPO training, with the overhead in percent."""
    rows: dict[str, dict[str, list[float]]] = {
        "env_steps_per_s": {"unguarded": [], "guarded": []},
        "train_steps_per_s": {"unguarded": [], "guarded": []},
    }
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
    out: dict[str, Any] = {"env_id": env_id, "timesteps": timesteps, "steps": steps}
    for metric, by_variant in rows.items():
        plain, guarded = median(by_variant["unguarded"]), median(by_variant["guarded"])
        out[metric] = {
            "unguarded": round(plain, 1),
            "guarded": round(guarded, 1),
            "overhead_pct": round(100 * (plain - guarded) / plain, 2),
        }
    return out
