"""Training-pool contracts: reward code by reference, and the requests and results of
validating generated code, training a policy and evaluating it.

The workflow never carries the code or the weights: it carries S3 keys (see `keys`), scores
and short text. `TrainProgress` is what a training activity heartbeats and resumes from.
"""

from __future__ import annotations

from pydantic import Field

from workflows.contracts.context import Contract
from workflows.contracts.judging import Criterion

# Hyperparameter configs by name: the env's preset, then the VARIANTS of
# activities/training/presets.py in their order (a test keeps the two in step).
CONFIG_NAMES = ("default", "lr_half", "lr_double", "epochs_10", "entropy", "wide_net")
MAX_CONFIGS = len(CONFIG_NAMES)


class RewardArtifact(Contract):
    """Reward code lives in S3; the workflow only carries its key and a short description."""

    key: str
    latex: str
    terms: list[str]
    summary: str
    # For template-authored rewards: the template and its parameters, so a reviser can re-render.
    template: str | None = None
    params: dict[str, float] = Field(default_factory=dict)


class ValidateRequest(Contract):
    """What validate_reward takes: the reward code to run on a few real env steps in the
    sandbox."""

    env_id: str
    reward_key: str
    steps: int = 64
    seed: int = 0
    # Whether the session's runs apply SHAPING (PPO without a warm start); else it is refused.
    shaping: bool = True


class ValidateJudgeRequest(Contract):
    """What validate_judge takes: the judge code to validate, in the sandbox, on episodes that
    must not pass (random actions, zero actions, a fall, the opposite direction; see
    activities/training/contrasts.py)."""

    env_id: str
    judge_key: str
    reward_key: str  # the episodes it is tried on carry this reward's terms
    # The criteria's names: what the judge must score and measure.
    criteria: list[str] = Field(default_factory=list)
    # The same criteria in full (measure, comparison, target, tolerance, metric): what the
    # verdicts on the episodes are computed from. Empty in requests from before (names only):
    # those validate the answers' format and the judge's own score on random actions.
    specs: list[Criterion] = Field(default_factory=list)
    # Each episode's length at most (0: the env's own episode length).
    steps: int = 0
    seed: int = 0


class ValidateResult(Contract):
    """What validate_reward and validate_judge return: whether the code ran, else its error."""

    ok: bool
    error: str | None = None
    steps: int = 0
    # Mean absolute value of each reward term over the validation steps.
    term_magnitudes: dict[str, float] = Field(default_factory=dict)


class EvalResult(Contract):
    """A deterministic evaluation episode of a trained policy: its video and trajectory keys, and
    its returns (what evaluate_policy returns, and what train_policy carries when asked)."""

    video_key: str | None
    trajectory_key: str
    episode_return: float
    env_return: float
    episode_length: int
    terminated: bool


class StopAtPass(Contract):
    """Stop a run once an evaluation checkpoint at or past `min_steps` (and `min_share` of
    its budget) passes the session's judge (every one of its kept episodes passes)."""

    criteria: list[Criterion]
    pass_threshold: float
    judge_key: str | None = None  # LLM-written judge code; None: the built-in code judge
    min_share: float = 0.0
    # Checkpoints are also kept at min_steps, twice and four times that ... before the first
    # quarter of the budget, so a run may stop there (0: the quarters only).
    min_steps: int = 0


class TrainRequest(Contract):
    """What train_policy takes: one training run of an iteration (reward, config, seed,
    timesteps, and the model to warm-start from, if any)."""

    session_id: str
    iteration: int
    run_name: str  # e.g. "c0_default_seed_0"
    env_id: str
    reward_key: str
    timesteps: int
    seed: int = 0
    config: str = "default"  # which hyperparameter config (see configs in SessionInput)
    configs: int = 1
    algo: str = "ppo"
    # Evaluation checkpoints' episode length (None: the env's own); see eval_checkpoints.py.
    eval_max_steps: int | None = None
    # Warm start: the model (and its VecNormalize) to start from instead of a fresh policy.
    init_model_key: str | None = None
    init_vecnormalize_key: str | None = None
    # Also play the final deterministic evaluation episode (seed `seed`, at most
    # eval_max_steps, with its video) beside training, and return it as `final_eval`: the
    # workflow then needs no evaluate_policy call. Off for workflows recorded before it.
    final_eval: bool = False
    # Judge the evaluation checkpoints as they are kept and stop at the first that passes.
    stop_at_pass: StopAtPass | None = None
    # A time budget: the steps are planned to fit it from the trainer's measured speed, at most
    # `timesteps` (None: train `timesteps`).
    max_seconds: float | None = None


class TrainResult(Contract):
    """What train_policy returns: where the run's model and files lie in S3, and how
    training went."""

    run_prefix: str  # sessions/<sid>/iter_<n>/<run_name>/
    model_key: str
    vecnormalize_key: str
    timesteps_done: int
    mean_episode_return: float | None = None  # under the session's reward
    mean_env_return: float | None = None  # under the env's own reward, for reference
    term_means: dict[str, float] = Field(default_factory=dict)  # per-step mean of each term
    wall_seconds: float = 0.0
    # Of wall_seconds, what the evaluation checkpoints took of training's own time (with an
    # evaluator beside training: only handing each policy over to it).
    eval_checkpoint_seconds: float = 0.0
    # After training ended, how long the activity waited for the evaluator beside it (the
    # last checkpoint and the final evaluation): evaluation on the session's critical path.
    eval_wait_seconds: float = 0.0
    # Time the evaluator beside training spent working (episodes, videos), mostly while
    # training went on.
    eval_work_seconds: float = 0.0
    steps_per_second: float = 0.0
    # Training still improving at the end (last quarter's returns above the previous quarter's).
    still_improving: bool = False
    # The timestep counter this run resumed from after a worker died (None: ran in one go).
    resumed_from_timesteps: int | None = None
    # The final evaluation episode, when the request asked for it (`final_eval`).
    final_eval: EvalResult | None = None
    # The evaluation checkpoint (% of the budget) that passed and stopped training early, and
    # the budget (timesteps_done is what was used).
    stopped_at_pct: int | None = None
    timesteps_budget: int | None = None
    # A batch member whose reward code failed mid-training: its one-line error. The batch's
    # other members trained on; this one's model is not to be used.
    fault: str | None = None


class TrainProgress(Contract):
    """Heartbeat details of a training activity: what a retry resumes from."""

    timesteps: int
    mean_return: float | None = None
    # The latest checkpoint in S3 (a folder prefix) and its timestep counter.
    checkpoint_key: str | None = None
    checkpoint_timesteps: int | None = None


class BatchMemberRef(Contract):
    """One run of a batched training: its name, reward and hyperparameter config."""

    run_name: str
    reward_key: str
    config: str = "default"


class TrainBatchRequest(Contract):
    """What train_batch takes: the runs of one iteration and seed (candidates x configs),
    trained together in one process per batch shape instead of one process per run."""

    session_id: str
    iteration: int
    batch_name: str  # e.g. "batch_seed_0": its checkpoints live under this run prefix
    env_id: str
    members: list[BatchMemberRef]
    timesteps: int  # per member
    seed: int = 0
    configs: int = 1
    eval_max_steps: int | None = None
    # As TrainRequest's: steps planned to fit this time budget, at most `timesteps`.
    max_seconds: float | None = None


class TrainBatchResult(Contract):
    """What train_batch returns: each member's TrainResult, in the request's order."""

    results: list[TrainResult]
    groups: int = 1  # processes (one per batch shape)
    steps_per_second: float = 0.0  # all members' steps over the activity's training wall


class BatchProgress(Contract):
    """Heartbeat details of train_batch: each group's progress (what a retry resumes from)."""

    groups: dict[str, TrainProgress] = Field(default_factory=dict)


class EvalRequest(Contract):
    """What evaluate_policy takes: a trained run's model, for one deterministic episode."""

    env_id: str
    reward_key: str
    run_prefix: str
    model_key: str
    vecnormalize_key: str
    seed: int = 0
    max_steps: int | None = None
    record_video: bool = True
    algo: str = "ppo"
