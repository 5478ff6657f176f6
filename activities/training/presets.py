"""PPO presets per environment, tuned for wall-clock time on a few CPU cores.

Each run trains on the batched engine (activities/training/batched/) with the threads its train
worker shares with it. The first presets were tuned when every run was one single-threaded
SB3 child stepping a `DummyVecEnv`. Measured then on a 2-core dev machine with HalfCheetah, a
rollout step costs ~0.25 ms of physics and wrappers per env plus ~1 ms per batched policy
forward, so 16 envs amortise the forward; with 2048 samples, 512-sample minibatches and 5 epochs
per update the update takes only ~20% of the wall time. Whatever the preset, observations and
rewards are normalised (VecNormalize) and the initial action noise is modest (log_std -0.5).

HalfCheetah, "run forward" (x velocity - 0.1 |a|^2), deterministic evaluation, this machine:

| preset | timesteps | train wall | steps/s | eval mean x velocity |
| --- | --- | --- | --- | --- |
| FAST, seed 0 | 300k | 149 s | 2016 | 4.20 m/s |
| FAST, seed 1 | 200k | 96 s | 2092 | 3.03 m/s |
| FAST, seed 2 | 200k | 102 s | 1978 | 4.48 m/s |

Sweeps (16 configs in parallel, one per core, on a faster 16-core machine, evaluation every 25k
steps) picked FAST over: 8 envs x 256 steps with a 64x64 tanh net (1.6 m/s after ~2x the
time), log_std_init 0 (stuck near 1.6 m/s for 1M steps), gamma 0.98 (plateau at ~2 m/s),
smaller minibatches or more epochs (slower per step, no faster per second) and SB3's defaults
(1 env, minibatch 64: ~0.8k steps/s there, 2.1 m/s after 350k steps). Over 4 seeds FAST ran
>= 2.7 m/s after 125k steps and >= 3.6 m/s after 300k; a constant learning rate left occasional
collapses of the final policy that the linear decay removes.

Run `python -m activities.training.presets` for the table of all presets, and
`python -m workers.local.bench --env ENV --timesteps N` to measure one end to end.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class PPOPreset:
    """PPO settings for an env (see the module docstring for how they were chosen)."""

    n_envs: int = 8
    n_steps: int = 256  # per env and rollout: n_envs * n_steps samples per PPO update
    batch_size: int = 512
    n_epochs: int = 5
    learning_rate: float = 3e-4
    # "linear": decays to 0 over the run (stabler late in training), "constant" otherwise.
    lr_schedule: str = "constant"
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    net_arch: tuple[int, ...] = (64, 64)
    activation: str = "tanh"  # "tanh" or "relu"
    log_std_init: float = 0.0
    ortho_init: bool = True
    norm_obs: bool = True
    norm_reward: bool = True
    clip_obs: float = 10.0

    def with_overrides(self, overrides: dict[str, Any]) -> PPOPreset:
        """This preset with some settings replaced; ValueError naming unknown settings."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown PPO setting(s) {unknown}; known: {sorted(known)}")
        clean = dict(overrides)
        if "net_arch" in clean:
            clean["net_arch"] = tuple(int(x) for x in clean["net_arch"])
        return replace(self, **clean)

    def fit_budget(self, timesteps: int) -> PPOPreset:
        """Shrink the rollout for tiny budgets so a few-thousand-step run does one real update."""
        per_update = self.n_envs * self.n_steps
        if timesteps >= per_update:
            return self
        n_steps = max(8, math.ceil(timesteps / self.n_envs))
        batch = min(self.batch_size, n_steps * self.n_envs)
        return replace(self, n_steps=n_steps, batch_size=batch)

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON types (summary.json's hyperparameters)."""
        d = asdict(self)
        d["net_arch"] = list(self.net_arch)
        return d


DEFAULT = PPOPreset()

# Settings every candidate of one batched training shares (activities/training/batched): they
# fix the arrays' shapes and the loop. Candidates that differ in one train in separate batches.
SHAPE_FIELDS = (
    "n_envs",
    "n_steps",
    "batch_size",
    "n_epochs",
    "net_arch",
    "activation",
    "ortho_init",
    "norm_obs",
    "norm_reward",
    "clip_obs",
)


def batch_key(preset: PPOPreset) -> tuple[Any, ...]:
    """What decides which batch a candidate trains in: its SHAPE_FIELDS values."""
    return tuple(getattr(preset, name) for name in SHAPE_FIELDS)


# The fast preset: 16 envs amortise the per-step policy forward (about 1 ms a call on one core,
# the largest cost of a rollout after physics), 2048 samples and 20 minibatch steps per update
# keep the update cheap, and a 256x256 ReLU net with lr 1e-3 decaying linearly to 0 learns fast
# and ends stable (the decay removes the late-training dips of a constant rate).
FAST = PPOPreset(
    n_envs=16,
    n_steps=128,
    batch_size=512,
    n_epochs=5,
    learning_rate=1e-3,
    lr_schedule="linear",
    net_arch=(256, 256),
    activation="relu",
    ortho_init=False,
    log_std_init=-0.5,
)

# FAST's network, rate and decay at a large batch (see "Humanoid-v5" below).
HUMANOID = replace(FAST, n_envs=128, n_steps=32, batch_size=4096, log_std_init=-1.0)

# Chosen from sweeps (one process per core, deterministic evaluation every 25k steps, 4 seeds for
# HalfCheetah; see the module docstring). Where FAST was not better the tanh preset stays:
# on Ant and Humanoid it was steadier.
PRESETS: dict[str, PPOPreset] = {
    "HalfCheetah-v5": FAST,
    "Hopper-v5": FAST,
    "Walker2d-v5": FAST,
    # Swimmer's reward is a slow forward drift: it needs a very long horizon (gamma 0.9999, as
    # in rl-zoo), long rollouts, and raw rewards (a running return std over such a horizon
    # shrinks them to nothing). "swim forward" at 200k steps, deterministic evaluation: FAST
    # with gamma 0.9999 swam 0.04 m/s, the same without reward normalisation 0.05, this 0.10.
    "Swimmer-v5": PPOPreset(
        n_envs=4,
        n_steps=1024,
        batch_size=256,
        n_epochs=10,
        gamma=0.9999,
        gae_lambda=0.98,
        norm_reward=False,
    ),
    "Reacher-v5": FAST,
    "InvertedDoublePendulum-v5": FAST,
    # Solved (return 1000) within 25k steps by the small default net.
    "InvertedPendulum-v5": PPOPreset(n_steps=128, batch_size=256, n_epochs=10, gamma=0.98),
    # Ant-v5 ends an episode when the torso bounces above 1.0 m, and wide early exploration
    # bounces it. "walk forward" at 200k steps, seeds 0/1/2, deterministic evaluation: with
    # std 0.6 (log_std -0.5) it walked 0.31/0.29/0.10 m/s (seed 2's training episodes lasted
    # 225 steps on average); with std 0.37 (log_std -1.0) 0.28/0.50/0.65 m/s (545 steps).
    "Ant-v5": PPOPreset(n_steps=256, batch_size=512, n_epochs=5, log_std_init=-1.0),
    # Humanoid learns at large batch: 128 envs x 32 steps (4,096 samples an update, one
    # minibatch) with FAST's wide ReLU net and decaying rate, and the quiet initial std Ant
    # needed.
    # Measured on 16 cores (4 runs side by side, 4 threads each, 300 s each, deterministic
    # return over 3 episodes): the former preset (8 envs x 256 steps, 128x128 tanh, lr 3e-4)
    # 622 after 479k steps (episodes 117 steps long); 64 envs x 64 steps with a 256x256 tanh
    # net 3,109 after 700k; the same with ReLU and lr 1e-3 decaying 3,550; this 4,582 after
    # 766k (742 steps). HumanoidStandup (the same body) takes it unmeasured.
    # The trainer for the humanoids, by time to pass on the 2-core machine: this preset on the
    # engine passed "walk forward with a natural gait" (the offline author's reward and judge)
    # at its 1.5M-step checkpoint, 0.81 m/s over 1,000-step replays, in 20 min beside other
    # work (3.4k steps/s alone: about 7.5 min). SB3's SAC at rl-zoo's settings under the same
    # reward trained 52 steps/s (1 thread, 10k updates after its 10k warm-up steps), with
    # episodes of 128 steps at 20k steps; at that speed the ~1M steps SAC needs to walk
    # Humanoid (rl-zoo trains it 2M) take over 5 hours here. PPO on the engine stays the
    # default for both bodies.
    "Humanoid-v5": HUMANOID,
    "HumanoidStandup-v5": HUMANOID,
}


# Hyperparameter variants a session trains beside the preset (`configs` > 1), in this order.
# Each changes one setting within the bounds that stayed stable in the sweeps above: the
# learning rate by 2x either way, more epochs per update, a little entropy bonus, a wider net.
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("lr_half", {"learning_rate": 0.5}),
    ("lr_double", {"learning_rate": 2.0}),
    ("epochs_10", {"n_epochs": 10}),
    ("entropy", {"ent_coef": 0.005}),
    ("wide_net", {"net_arch": (256, 256)}),
)
MAX_CONFIGS = 1 + len(VARIANTS)


def config_variants(env_id: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    """n (name, PPO overrides) pairs: the env's preset first ("default"), then VARIANTS.

    learning_rate in VARIANTS is a factor on the preset's rate; the result stays in
    [1e-5, 3e-3]. Raises ValueError when n is outside 1..MAX_CONFIGS.
    """
    if not 1 <= n <= MAX_CONFIGS:
        raise ValueError(f"configs must be between 1 and {MAX_CONFIGS} (got {n})")
    base = preset_for(env_id)
    out: list[tuple[str, dict[str, Any]]] = [("default", {})]
    for name, change in VARIANTS[: n - 1]:
        overrides = dict(change)
        if "learning_rate" in overrides:
            overrides["learning_rate"] = min(
                max(base.learning_rate * overrides["learning_rate"], 1e-5), 3e-3
            )
        if "net_arch" in overrides:
            overrides["net_arch"] = list(overrides["net_arch"])
        out.append((name, overrides))
    return out


def preset_for(env_id: str, overrides: dict[str, Any] | None = None) -> PPOPreset:
    """The env's PPO preset (the default for envs without one) with `overrides` applied."""
    return PRESETS.get(env_id, DEFAULT).with_overrides(overrides or {})


def describe() -> str:
    """The preset table as markdown, for docs and `python -m activities.training.presets`."""
    cols = ["n_envs", "n_steps", "batch_size", "n_epochs", "learning_rate", "lr_schedule"]
    cols += ["gamma", "net_arch", "activation", "log_std_init"]
    lines = ["| env | " + " | ".join(cols) + " |", "|" + " --- |" * (len(cols) + 1)]
    for env_id, p in PRESETS.items():
        lines.append(f"| {env_id} | " + " | ".join(str(getattr(p, c)) for c in cols) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe())
