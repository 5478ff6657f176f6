"""Training budgets from the body: the steps a session's first iteration may train per run when
the person names none.

rl-zoo's PPO budgets (n_timesteps in its hyperparams/ppo.yml) are the reference: 1M steps for
the planar and quadruped bodies, the swimmer and the arm, millions for the humanoids. Stop at
pass makes a large budget cheap for what learns fast: a run may stop at any judged checkpoint
from `SessionInput.min_training_steps` on, so an easy case still ends where it passes.

Measured on the 2-core machine (single runs, the offline author's rewards, deterministic
replays of 3 episodes):
- Walker2d "sprint with high knees": the higher knee averaged 0.79 m (target at least 0.80)
  after 600k steps at 2.3 m/s and 1.05 m after 1M at 1.96 m/s; five other rewards at 300-400k
  all stayed at or under 0.79 m.
- HalfCheetah "run forward with its head lowered": 1.54 m/s at 200k, 1.83 at 400k, 2.03 at 800k
  (target at least 2), the head at 0.17 m throughout.
- Hopper "jump as high as possible": a 1.69 m peak at 200k, 1.87 m at 400k (target 1.70 m).
"""

from __future__ import annotations

BODY_STEPS: dict[str, int] = {
    "HalfCheetah-v5": 1_000_000,
    "Ant-v5": 1_000_000,
    "Hopper-v5": 1_000_000,
    "Walker2d-v5": 1_000_000,
    "Swimmer-v5": 1_000_000,
    "InvertedDoublePendulum-v5": 1_000_000,
    # Balanced within 25k steps by its preset (activities/training/presets.py).
    "InvertedPendulum-v5": 200_000,
    # rl-zoo: 1M. "Reach the target quickly and hold still" passed at 200k steps here (42 s);
    # with 1M its checkpoints' worst episodes missed until the end, and it trained all 1M
    # (186 s) for the same verdict.
    "Reacher-v5": 300_000,
    # rl-zoo trains PPO on Humanoid for 10M steps; at about 3k steps/s here that is 55 min a
    # run, so the humanoids start at 2M (about 11 minutes here). "Walk forward with a natural
    # gait" passed at its 75% checkpoint (1.5M steps: 0.81 m/s, 1,000-step episodes).
    "Humanoid-v5": 2_000_000,
    "HumanoidStandup-v5": 2_000_000,
}
# An env without a measured budget (a custom one).
DEFAULT_STEPS = 200_000

# Steps per second of one PPO run as a session trains it, alone on the 2-core reference machine:
# on the engine, beside its evaluator (which keeps a checkpoint every 10 % of the steps), under
# the offline author's reward for a dev intent on that body (its sandbox included); from the
# run's summary.json in `policyforge run --timesteps 200000 --min-training-steps 200000
# --max-iterations 1` (measured 2026-11-29). What a session's expected wall time is worked out
# from, as an upper bound: a longer run keeps its checkpoints as far apart in proportion but
# each costs the evaluator the same episodes, so it trains faster (HalfCheetah: 6,465 steps/s at
# 200k, 7,790 at its 1M budget). Two sessions at once each kept 83-88 % of these.
REFERENCE_CORES = 2
STEPS_PER_S: dict[str, float] = {
    "HalfCheetah-v5": 6_470,
    "Ant-v5": 2_900,
    "Hopper-v5": 5_310,
    "Walker2d-v5": 4_520,
    "Humanoid-v5": 2_960,
    "HumanoidStandup-v5": 2_230,
    "Swimmer-v5": 3_980,
    "Reacher-v5": 6_710,
    "InvertedPendulum-v5": 6_470,
    "InvertedDoublePendulum-v5": 6_150,
}


def body_budget(env_id: str) -> int:
    """The default steps per run of a session's first iteration on `env_id`."""
    return BODY_STEPS.get(env_id, DEFAULT_STEPS)


def expected_seconds(env_id: str, steps: int) -> float | None:
    """Wall seconds `steps` of one run take on the reference machine (None: not measured)."""
    rate = STEPS_PER_S.get(env_id)
    return steps / rate if rate else None


def describe() -> str:
    """The budget table as markdown (README): each body's steps and the wall time they take
    on the reference machine. `python -m workflows.contracts.budgets` prints it."""
    lines = [
        f"| env | budget (steps per run) | steps/s on {REFERENCE_CORES} cores | "
        f"a run's budget on {REFERENCE_CORES} cores |",
        "| --- | ---: | ---: | ---: |",
    ]
    for env_id, steps in BODY_STEPS.items():
        rate = STEPS_PER_S.get(env_id)
        seconds = expected_seconds(env_id, steps)
        took = f"{seconds / 60:.1f} min" if seconds is not None else "not measured"
        lines.append(f"| {env_id} | {steps:,} | {f'{rate:,.0f}' if rate else '-'} | {took} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe())
