"""The wire format between a supervisor (activity or CLI) and a runner (a stage's job module).

What to run: `ChildJob` (the job module and its mode). Request: a JSON file, `ChildRequest`.
Output: JSON lines on the child's stdout (`progress`, `log` events) and `result.json` in the
output folder: `{"ok": true, ...}` on success, or `{"ok": false, "error": "<one line>",
"reward_fault": bool}` on failure (exit status non-zero). Light on imports: the worker process
reads it without loading torch or gymnasium.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workflows.contracts.judging import Criterion

Mode = Literal[
    "validate",
    "train",
    "train_batch",
    "evaluate",
    "evaluate_beside",
    "evaluate_members_beside",
    "validate_judge",
    "judge",
]
RESULT_FILE = "result.json"
DEFAULT_REWARD_FILENAME = "reward_fn.py"
DEFAULT_JUDGE_FILENAME = "judge_fn.py"
# What a training checkpoint folder holds (written by the training stage's checkpoints).
CHECKPOINT_FILES = ("model.zip", "vecnormalize.npz", "scalars.jsonl")
# A batched training's checkpoint (activities/training/batched/state.py): the whole batch.
BATCH_CHECKPOINT_FILES = ("batch_state.npz", "batch_state.json")
# Where the engine's networks train: the CPU, a GPU (failing where torch sees none), or a GPU
# where torch sees one and else the CPU (activities/training/batched/device.py). A training
# worker's setting, which its activities put in each training request.
TRAIN_DEVICES = ("cpu", "cuda", "auto")
TRAIN_DEVICE_ENV = "POLICYFORGE_TRAIN_DEVICE"


def check_device(value: str, setting: str = "device") -> str:
    """`value` if it names a training device; else ValueError, one line naming `setting`."""
    if value not in TRAIN_DEVICES:
        raise ValueError(f"{setting}: one of {', '.join(TRAIN_DEVICES)} (got {value!r})")
    return value


@dataclass(frozen=True)
class ChildJob:
    """Which runner a supervisor starts: `python -m MODULE MODE` (a stage's job module, which
    runs the shared harness `activities.runner.child`, in one of its modes)."""

    module: str
    mode: Mode


class CheckedShaping(BaseModel):
    """A reward's SHAPING as its validation checked it (`value` None: it has none). Every later
    run of the same code applies this, whatever the module's SHAPING is when it runs again."""

    model_config = ConfigDict(extra="forbid")

    value: Any = None


class BatchMember(BaseModel):
    """One candidate of a batched training run (train_batch): its reward and PPO settings."""

    model_config = ConfigDict(extra="forbid")

    name: str  # the run's name, e.g. "c1_default_seed_0": its outputs go to <out>/<name>/
    reward_source: str
    reward_filename: str = DEFAULT_REWARD_FILENAME
    # Its SHAPING as validation checked it (None: not validated here; the module's own applies).
    reward_shaping: CheckedShaping | None = None
    ppo: dict[str, Any] = Field(default_factory=dict)


class ChildRequest(BaseModel):
    """What a child run is asked to do: one model for every mode (each reads its own fields)."""

    model_config = ConfigDict(extra="forbid")

    env_id: str
    # The reward code itself, or a local path to it (at most one of the two; every mode but
    # `judge` needs one).
    reward_source: str | None = None
    reward_path: str | None = None
    # Name shown in error messages ("reward_fn.py line 12: ZeroDivisionError: ...").
    reward_filename: str = DEFAULT_REWARD_FILENAME
    # The reward's SHAPING as validation checked it (None: not validated here; the module's own
    # applies, checked when the run starts).
    reward_shaping: CheckedShaping | None = None

    # validate_judge / judge: the judge code, the criteria it must score, and (judge) the
    # trajectory file it judges.
    judge_source: str | None = None
    judge_filename: str = DEFAULT_JUDGE_FILENAME
    criteria: list[str] = Field(default_factory=list)
    # validate_judge: the criteria with their targets (which contrasting episodes to play, and
    # what the behaviour library measures on them); empty: the names above only.
    judge_criteria: list[Criterion] = Field(default_factory=list)
    trajectory_path: str | None = None
    # judge: more trajectories judged by the same code in the same process (checkpoints).
    extra_trajectories: list[str] = Field(default_factory=list)
    seed: int = 0
    env_kwargs: dict[str, Any] = Field(default_factory=dict)

    # Benchmark only (bench-sandbox): run its own fixed reward in the runner with plain exec
    # and no sandbox, to measure what the sandbox costs. Any other reward is refused.
    unguarded: bool = False
    # Tests only: run generated code without the static check and the restricted builtins
    # (plain exec, real builtins), to show that the OS layers contain it on their own.
    python_layers: bool = True

    # validate: random-action steps to run; validate_judge: each episode's length at most (0:
    # the env's own episode length).
    steps: int = 64

    # train / evaluate: the algorithm ("ppo", "sac" or "td3").
    algo: str = "ppo"

    # train: budget, PPO settings over the env's preset (see presets.py), progress cadence.
    timesteps: int = 0
    ppo: dict[str, Any] = Field(default_factory=dict)
    # train_batch: the candidates trained together (each in a sandbox of its own).
    members: list[BatchMember] = Field(default_factory=list)
    progress_interval_s: float = 2.0
    # train / train_batch: cores the run may use (physics threads and torch threads).
    threads: int = 1
    # train / train_batch on the engine: where its networks and update run (TRAIN_DEVICES);
    # physics stays on the CPU cores.
    device: str = "cpu"
    # train / train_batch on the engine: plan the steps to fit this many seconds from the
    # throughput measured in the first updates (`timesteps` is then the most it may train).
    max_seconds: float = 0.0
    # train: "auto" (PPO on the batched engine where it can) or "sb3" (the Stable-Baselines3
    # trainer, the reference bench-train measures the engine against).
    engine: Literal["auto", "sb3"] = "auto"
    # validate: whether the session's runs apply a reward's SHAPING (else validation refuses it).
    shaping: bool = True
    # Checkpoint every this many timesteps (0: never); resume from a checkpoint folder.
    checkpoint_every: int = 0
    resume_dir: str | None = None
    # Warm start: a folder with model.zip and vecnormalize.npz whose weights and statistics
    # the new run starts from (its timestep counter starts at 0).
    init_dir: str | None = None
    # Evaluation checkpoints at 25/50/75/100%: episodes each (0: none); their length cap is
    # max_steps below.
    eval_checkpoint_episodes: int = 0
    # Also keep checkpoints at this many steps, twice and four times that ... before 25%
    # (0: none): where a run may stop at pass (eval_checkpoints.checkpoint_fractions).
    early_eval_steps: int = 0
    # Hand each evaluation checkpoint's policy to the evaluator beside training (the
    # evaluate_beside mode) instead of playing it in the training child.
    eval_handoff: bool = False
    # Evaluate one deterministic episode (env's own reward) every this many timesteps into
    # metrics/evals.jsonl (0: never); bench-train uses it.
    eval_every: int = 0

    # evaluate: the trained policy (defaults: model.zip / vecnormalize.npz in the output folder).
    model_path: str | None = None
    vecnormalize_path: str | None = None
    max_steps: int | None = None
    record_video: bool = True
    video_size: int = 480
    # evaluate_beside: the training child's output folder it watches for handed-over
    # checkpoints, and whether it plays the final evaluation episode once training ends.
    watch_dir: str | None = None
    final_eval: bool = False

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        return check_device(value)

    @model_validator(mode="after")
    def _one_reward(self) -> ChildRequest:
        if self.reward_source is not None and self.reward_path is not None:
            raise ValueError("give at most one of reward_source and reward_path")
        return self


class ChildFailed(RuntimeError):
    """The child exited non-zero; `message` is one line, `reward_fault` blames generated code
    (the reward's, or the judge's in the judge modes), `sandbox_unavailable` says a required
    sandbox layer is missing on this machine (retrying here cannot help)."""

    def __init__(self, message: str, reward_fault: bool, sandbox_unavailable: bool = False):
        super().__init__(message)
        self.message = message
        self.reward_fault = reward_fault
        self.sandbox_unavailable = sandbox_unavailable
