"""Session contracts: what a person asks for and its validation, the stages, what each
iteration leaves behind (run and iteration records), the status a query returns, what a run
carries into the next when it continues as new, and the session's result.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from workflows.contracts.budgets import body_budget
from workflows.contracts.context import OFFLINE_MODEL, Contract, UserInput, field_errors
from workflows.contracts.judging import (
    Criterion,
    CriterionScore,
    JudgeCode,
    Judgment,
    VisualCriteria,
)
from workflows.contracts.queues import DEFAULT_QUEUE_PREFIX, Accelerator
from workflows.contracts.training import MAX_CONFIGS, RewardArtifact, TrainResult
from workflows.contracts.usage import LLMUsage

# The 10 Gymnasium MuJoCo v5 environments policyforge trains on.
ENV_IDS: tuple[str, ...] = (
    "HalfCheetah-v5",
    "Ant-v5",
    "Hopper-v5",
    "Walker2d-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "Swimmer-v5",
    "Reacher-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
)

MAX_CANDIDATES = 8
MAX_FIX_ATTEMPTS = 5  # validations of one piece of generated code before the session gives up

Stage = Literal[
    "starting",
    "eliciting",
    "authoring",
    "reviewing",
    "fixing",
    "validating",
    "training",
    "evaluating",
    "judging",
    "synthesizing",
    "revising",
    "awaiting_approval",
    "continuing",
    "done",
    "failed",
]


class SessionInput(UserInput):
    """What a person asks for. Extra fields are rejected so a typo never silently does nothing."""

    prompt: str
    env_id: str
    # Steps per run of the first iteration; left out, the body's budget (contracts/budgets.py),
    # filled in when the request is read so that the session's history records the number.
    total_timesteps: int
    max_iterations: int = 3
    # Kept so that older requests still validate: the verdict is every criterion met
    # (workflows/verdict.py), whatever the score.
    pass_threshold: float = 0.8
    # A PPO run stops once an evaluation checkpoint passes the judge, from this many steps on:
    # easy cases end early whatever the budget.
    min_training_steps: int = 50_000
    # Older requests' rule, on top of the steps: not before this share of the budget (1.0:
    # always train the whole budget).
    min_training_share: float | None = None
    seeds: int = 1
    llm_model: str = OFFLINE_MODEL
    # The reviser may raise the per-iteration budget up to this cap (default: 2x total_timesteps).
    max_timesteps_per_iteration: int | None = None
    # Steps of the deterministic evaluation rollout (None: the env's own episode length).
    eval_max_steps: int | None = None
    session_id: str | None = None
    # Worker pools polled: <prefix>-llm, <prefix>-train, <prefix>-judge.
    queue_prefix: str = DEFAULT_QUEUE_PREFIX
    # Where the train pool's work runs: any training worker (the shared queue), or only GPU
    # or only CPU ones (<prefix>-train-gpu, <prefix>-train-cpu).
    accelerator: Accelerator = "any"
    # Distinct reward candidates written (and trained) per iteration.
    candidates: int = 1
    # PPO hyperparameter configs trained per candidate: the env's preset, then variants of it
    # (activities/training/presets.py VARIANTS).
    configs: int = 1
    # A revision starts from the best policy so far (kept only where its new reward values
    # that policy more than a fresh one: activities/training/batched/warm.py). Left out: on
    # for PPO, off for SAC and TD3.
    warm_start: bool = False
    # The RL algorithm: PPO (default, presets per env), SAC or TD3 (rl-zoo settings).
    algo: Literal["ppo", "sac", "td3"] = "ppo"
    # A person approves rewards before training: never, the first iteration's, or every one.
    approval: Literal["none", "first", "every"] = "none"
    # How long an approval gate waits, and what happens when nobody answers.
    approval_timeout_s: int = 3600
    approval_timeout_action: Literal["approve", "abort"] = "approve"
    # Keep the custom search attributes (stage, env, iteration, best score, passed) current.
    search_attributes: bool = True
    # LLM sessions: a vision-language judge also watches each rollout's video (same model).
    vlm_judge: bool = True
    # Caps: reaching one ends the session as budget_exhausted, keeping the best policy so far.
    max_llm_cost_usd: float | None = None
    max_training_minutes: float | None = None
    # Iterations one workflow run holds before the session continues as new with a fresh
    # history (sooner when the server suggests it): long sessions stay within history limits.
    iterations_per_run: int = 10

    @model_validator(mode="before")
    @classmethod
    def _from_the_body(cls, data: object) -> object:
        """No total_timesteps given: the body's budget. No warm_start given: PPO revisions
        start from the best policy so far (SAC and TD3 do not warm-start)."""
        if not isinstance(data, dict):
            return data
        if data.get("total_timesteps") is None:
            data = {**data, "total_timesteps": body_budget(str(data.get("env_id", "")))}
        if data.get("warm_start") is None:
            data = {**data, "warm_start": data.get("algo", "ppo") == "ppo"}
        return data

    @property
    def timesteps_cap(self) -> int:
        return self.max_timesteps_per_iteration or 2 * self.total_timesteps

    @property
    def runs_on_engine(self) -> bool:
        """PPO: every run trains on the batched engine (runs of one seed together, a warm
        start's one by one), which applies a reward's SHAPING; the SB3 trainer does neither."""
        return self.algo == "ppo"

    @property
    def timed_timesteps_cap(self) -> int:
        """With max_training_minutes, the most steps a run may plan to fit its time (a large
        machine trains more steps in the same minutes)."""
        return self.max_timesteps_per_iteration or 20 * self.total_timesteps


def input_errors(data: dict) -> list[str]:
    """Validate raw session input; returns one-line errors that each name a field."""
    try:
        inp = SessionInput.model_validate(data)
    except ValidationError as exc:
        return field_errors(exc, "SessionInput, workflows/contracts/session.py")
    errors = []
    if not inp.prompt.strip():
        errors.append("prompt: is empty; describe the behaviour, e.g. 'run forward'")
    if inp.env_id not in ENV_IDS:
        errors.append(
            f"env_id: unknown environment {inp.env_id!r}; choose one of {', '.join(ENV_IDS)}"
        )
    for field in ("total_timesteps", "max_iterations", "seeds"):
        value = getattr(inp, field)
        if value <= 0:
            errors.append(f"{field}: must be a positive integer (got {value})")
    if inp.max_timesteps_per_iteration is not None and inp.max_timesteps_per_iteration < max(
        inp.total_timesteps, 1
    ):
        errors.append(
            "max_timesteps_per_iteration: must be at least total_timesteps "
            f"({inp.max_timesteps_per_iteration} < {inp.total_timesteps})"
        )
    if inp.eval_max_steps is not None and inp.eval_max_steps <= 0:
        errors.append(f"eval_max_steps: must be a positive integer (got {inp.eval_max_steps})")
    if not 0.0 < inp.pass_threshold <= 1.0:
        errors.append(f"pass_threshold: must be in (0, 1] (got {inp.pass_threshold})")
    if inp.min_training_steps <= 0:
        errors.append(
            f"min_training_steps: must be a positive integer (got {inp.min_training_steps})"
        )
    if inp.min_training_share is not None and not 0.0 < inp.min_training_share <= 1.0:
        errors.append(
            f"min_training_share: must be in (0, 1] (got {inp.min_training_share}); "
            "1 trains every step of the budget"
        )
    if not inp.llm_model.strip():
        errors.append("llm_model: is empty; use 'offline' or a model name")
    if inp.algo != "ppo" and inp.configs > 1:
        errors.append("configs: hyperparameter configs are PPO's; use configs=1 with sac or td3")
    if inp.algo != "ppo" and inp.warm_start:
        errors.append("warm_start: only PPO runs warm-start; leave it off with sac or td3")
    if not 1 <= inp.configs <= MAX_CONFIGS:
        errors.append(f"configs: must be between 1 and {MAX_CONFIGS} (got {inp.configs})")
    if not 1 <= inp.candidates <= MAX_CANDIDATES:
        errors.append(f"candidates: must be between 1 and {MAX_CANDIDATES} (got {inp.candidates})")
    if inp.iterations_per_run <= 0:
        errors.append(
            f"iterations_per_run: must be a positive integer (got {inp.iterations_per_run})"
        )
    if inp.approval_timeout_s <= 0:
        errors.append(f"approval_timeout_s: must be positive (got {inp.approval_timeout_s})")
    for field in ("max_llm_cost_usd", "max_training_minutes"):
        value = getattr(inp, field)
        if value is not None and value <= 0:
            errors.append(f"{field}: must be positive, or left out for no cap (got {value})")
    return errors


# --- what each iteration leaves behind ----------------------------------------------------------


class RunRecord(Contract):
    """One training run of an iteration: its S3 keys and its judged score."""

    run_name: str
    seed: int
    run_prefix: str
    model_key: str
    vecnormalize_key: str
    video_key: str | None
    trajectory_key: str
    timesteps_done: int
    score: float
    passed: bool


class RunResult(Contract):
    """One run of an iteration, as its record lists it."""

    candidate: int
    config: str
    seed: int
    mean_return: float | None = None  # under the candidate's reward, at the end of training
    mean_env_return: float | None = None
    score: float
    passed: bool


class IterationRecord(Contract):
    """What one iteration left behind: its winning reward, score, diagnosis and best run,
    and how the reviser got there."""

    iteration: int
    reward_key: str
    reward_summary: str
    latex: str
    timesteps: int
    score: float
    passed: bool
    diagnosis: str
    failure_tags: list[str] = Field(default_factory=list)
    # The judges behind `score`: the code judge's and the video judge's (None: not used).
    code_score: float | None = None
    visual_score: float | None = None
    # "video judge unavailable: <why>" when the best run was judged without the video judge
    # (or "synthesizer unavailable: <why>"); None when every judge answered or none was used.
    video_note: str | None = None
    best_run: RunRecord
    runs: int = 1
    changes: str | None = None  # what the reviser changed to produce this iteration's reward
    review_notes: str | None = None  # what the reviewer corrected before training
    # What the iteration went on without: a candidate whose author or reviser gave no usable
    # answer, a review or the video judge's criteria that failed (each: who, where, why).
    dropped: list[str] = Field(default_factory=list)
    candidate: int = 0  # the reward candidate that won this iteration
    candidates: int = 1
    config: str = "default"  # the hyperparameter config that won
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    training_seconds: float = 0.0
    # How the reviser got here: the iteration it revised, what it looked up, what people said.
    based_on: int | None = None
    tools_used: list[str] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    # Every run of the iteration (candidate x config x seed): its training return and score.
    run_results: list[RunResult] = Field(default_factory=list)
    batched: bool = False  # the runs of each seed trained together in one process
    # Steps the best run trained of the `timesteps` budgeted (fewer when it stopped at pass),
    # and the evaluation checkpoint (% of the budget) whose judgment stopped it.
    timesteps_used: int | None = None
    stopped_at_pct: int | None = None
    # The best run's criteria as judged: each measured value against its target.
    criteria: list[CriterionScore] = Field(default_factory=list)


class IterationEvidence(Contract):
    """An iteration's winning reward with the training and judgment of its best run."""

    iteration: int
    reward: RewardArtifact
    judgment: Judgment
    train: TrainResult


# --- session state and result ---------------------------------------------------------------


class SessionStatus(Contract):
    """What the status query returns: the session's stage, progress, best score, iterations
    and what waits on a person."""

    session_id: str
    prompt: str
    env_id: str
    model_label: str
    stage: Stage
    iteration: int
    max_iterations: int
    timesteps_done: int  # of the runs in the current iteration (mean over seeds)
    timesteps_target: int
    best_score: float | None
    best_iteration: int | None
    iterations: list[IterationRecord] = Field(default_factory=list)
    criteria: list[Criterion] = Field(default_factory=list)
    # The best iteration's verdict in words: "passed", or "not passed: forward speed 1.74
    # m/s, target at least 2.00 m/s" ("" before the first judgment).
    verdict: str = ""
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    training_seconds: float = 0.0  # of the training calls that ended
    # When the oldest training call now running began (None: none runs), and when each began:
    # a client shows training_seconds plus the time each has run, so the figure moves while
    # runs train, as fast as the ended ones were charged (each run its own time).
    training_since: datetime | None = None
    training_began: list[datetime] = Field(default_factory=list)
    note: str | None = None  # e.g. which budget ran out
    # Words of the intent no criterion measures (the offline author's style words).
    unmeasured: list[str] = Field(default_factory=list)
    approval: str = "none"
    awaiting_approval: int | None = None  # the iteration waiting for a person, if any
    pending_rewards: list[RewardArtifact] = Field(default_factory=list)  # what awaits approval
    feedback_pending: int = 0
    signal_errors: list[str] = Field(default_factory=list)  # invalid signals, newest last
    runs: int = 1  # workflow runs so far: a long session continues as new between iterations
    # What the session asked for, and the queue its train-pool work waits on when that is not
    # any (None: the shared one).
    accelerator: Accelerator = "any"
    train_queue: str | None = None
    # "waiting for a GPU training worker (no worker polls queue ...)": set by the clients that
    # show the status (`policyforge status`, the dashboard) from the queue's pollers, which a
    # workflow cannot see; never by the workflow.
    waiting: str | None = None

    def training_so_far(self, now: datetime) -> float:
        """Seconds of training at `now`: the ended calls' time plus the time each running one
        has run (clients pass their clock; the workflow never calls this)."""
        began = self.training_began or ([self.training_since] if self.training_since else [])
        return self.training_seconds + sum(max(0.0, (now - b).total_seconds()) for b in began)


class SessionCarry(Contract):
    """What a session takes into its next workflow run when it continues as new."""

    records: list[IterationRecord]  # every iteration so far, the last one done last
    criteria: list[Criterion]
    judge: JudgeCode | None = None
    visual_criteria: VisualCriteria | None = None
    evidence: list[IterationEvidence]  # the last iteration's and the best one's
    configs: list[str]
    llm_usage: LLMUsage
    training_seconds: float
    extra_iterations: int = 0
    feedback: list[str] = Field(default_factory=list)
    signal_errors: list[str] = Field(default_factory=list)
    runs: int = 1  # workflow runs of this session so far


class SessionResult(Contract):
    """What the session workflow returns: how it ended, its best iteration and every iteration."""

    session_id: str
    # stopped: a model failed for good after iterations were judged (the note says which and
    # where); the best policy so far is kept, as for a budget.
    status: Literal["passed", "not_passed", "budget_exhausted", "aborted", "stopped"]
    passed: bool
    model_label: str
    # None only when a budget ran out before the first iteration was judged.
    best_iteration: int | None
    best_score: float | None
    best: IterationRecord | None
    iterations: list[IterationRecord]
    criteria: list[Criterion] = Field(default_factory=list)
    verdict: str = ""  # the best iteration's, in words (see SessionStatus.verdict)
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    training_seconds: float = 0.0
    note: str | None = None
    # Words of the intent no criterion measures: a pass is "partly expressed".
    unmeasured: list[str] = Field(default_factory=list)
