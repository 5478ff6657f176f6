"""Pydantic contracts shared by the workflow, the activities, the workers and the CLI.

This module is imported inside the Temporal workflow sandbox: it may depend on pydantic and the
standard library only (no numpy, torch, gymnasium, boto3).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_QUEUE_PREFIX = "policyforge"


def task_queue(pool: Literal["llm", "train", "judge"], prefix: str = DEFAULT_QUEUE_PREFIX) -> str:
    """Task queue of a worker pool; a prefix lets several deployments share one namespace."""
    return f"{prefix}-{pool}"


TASK_QUEUE_LLM = task_queue("llm")
TASK_QUEUE_TRAIN = task_queue("train")
TASK_QUEUE_JUDGE = task_queue("judge")

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

OFFLINE_MODEL = "offline"
OFFLINE_LABEL = "offline (no LLM)"


def is_offline(model: str) -> bool:
    """The offline author (no LLM), by its name or its label."""
    return model.strip().lower() in (OFFLINE_MODEL, OFFLINE_LABEL.lower())


# Custom search attributes registered on the embedded dev server (Keyword/Int/Double/Bool).
SEARCH_ATTRIBUTES: dict[str, str] = {
    "PolicyforgeStage": "Keyword",
    "PolicyforgeEnv": "Keyword",
    "PolicyforgeIteration": "Int",
    "PolicyforgeBestScore": "Double",
    "PolicyforgePassed": "Bool",
}

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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionInput(_Model):
    """What a person asks for. Extra fields are rejected so a typo never silently does nothing."""

    prompt: str
    env_id: str
    total_timesteps: int = 200_000
    max_iterations: int = 3
    pass_threshold: float = 0.8
    seeds: int = 1
    llm_model: str = OFFLINE_MODEL
    # The reviser may raise the per-iteration budget up to this cap (default: 2x total_timesteps).
    max_timesteps_per_iteration: int | None = None
    # Steps of the deterministic evaluation rollout (None: the env's own episode length).
    eval_max_steps: int | None = None
    session_id: str | None = None
    # Worker pools polled: <prefix>-llm, <prefix>-train, <prefix>-judge.
    queue_prefix: str = DEFAULT_QUEUE_PREFIX
    # Distinct reward candidates written (and trained) per iteration.
    candidates: int = 1
    # PPO hyperparameter configs trained per candidate: the env's preset, then variants of it
    # (activities/training/presets.py VARIANTS).
    configs: int = 1
    # Start each iteration's training from the best policy so far instead of from scratch.
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

    @property
    def timesteps_cap(self) -> int:
        return self.max_timesteps_per_iteration or 2 * self.total_timesteps


def input_errors(data: dict) -> list[str]:
    """Validate raw session input; returns one-line errors that each name a field."""
    try:
        inp = SessionInput.model_validate(data)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "input"
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown field; remove it (see SessionInput in workflows/models.py)"
            out.append(f"{field}: {msg}")
        return out
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


MAX_CANDIDATES = 8
# Hyperparameter configs by name: the env's preset, then the VARIANTS of
# activities/training/presets.py in their order (a test keeps the two in step).
CONFIG_NAMES = ("default", "lr_half", "lr_double", "epochs_10", "entropy", "wide_net")
MAX_CONFIGS = len(CONFIG_NAMES)
MAX_FIX_ATTEMPTS = 5  # validations of one piece of generated code before the session gives up


# --- criteria, rewards and judgments -------------------------------------------------------


class Criterion(_Model):
    """A measurable behavioural criterion, checked by the code judge on a trajectory."""

    name: str
    description: str
    # A metric the code judge computes from a trajectory (see activities/judging/metrics.py);
    # None for criteria an LLM elicited, which its judge code measures.
    metric: str | None = None
    # How to measure it from a trajectory, in words (what the judge code computes).
    measure: str = ""
    target: float
    # at_least: value >= target passes; at_most: value <= target; near: |value-target| <= tol.
    direction: Literal["at_least", "at_most", "near"] = "at_least"
    tolerance: float = 0.0
    weight: float = 1.0


class ApprovalDecision(_Model):
    """What a person answers at an approval gate (`approve_reward` update or `approve` signal)."""

    approve: bool = True
    note: str = ""
    iteration: int | None = None  # the iteration being approved (None: whichever waits)


class LLMCall(_Model):
    """One LLM call's accounting: tokens, latency and estimated cost (None: unknown price)."""

    agent: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None


class LLMUsage(_Model):
    """LLM calls summed over an iteration or a session."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # Calls to models without a price in activities/llm/prices.py: their cost is not counted.
    unpriced_calls: int = 0

    def add(self, call: LLMCall | None) -> LLMUsage:
        if call is None:
            return self
        return LLMUsage(
            calls=self.calls + 1,
            input_tokens=self.input_tokens + call.input_tokens,
            output_tokens=self.output_tokens + call.output_tokens,
            cost_usd=round(self.cost_usd + (call.cost_usd or 0.0), 6),
            unpriced_calls=self.unpriced_calls + (call.cost_usd is None),
        )


class RewardArtifact(_Model):
    """Reward code lives in S3; the workflow only carries its key and a short description."""

    key: str
    latex: str
    terms: list[str]
    summary: str
    # For template-authored rewards: the template and its parameters, so a reviser can re-render.
    template: str | None = None
    params: dict[str, float] = Field(default_factory=dict)


class ElicitRequest(_Model):
    session_id: str
    prompt: str
    env_id: str
    llm_model: str


class ElicitResult(_Model):
    criteria: list[Criterion]
    model_label: str
    usage: LLMCall | None = None


class AuthorRequest(_Model):
    session_id: str
    iteration: int
    prompt: str
    env_id: str
    llm_model: str
    criteria: list[Criterion] = Field(default_factory=list)
    candidate: int = 0
    candidates: int = 1


class AuthorResult(_Model):
    reward: RewardArtifact
    criteria: list[Criterion]
    model_label: str
    usage: LLMCall | None = None


class JudgeAuthorRequest(_Model):
    session_id: str
    prompt: str
    env_id: str
    llm_model: str
    criteria: list[Criterion]


class JudgeCode(_Model):
    key: str  # sessions/<sid>/judge_fn.py
    summary: str
    usage: LLMCall | None = None


class ReviewRequest(_Model):
    session_id: str
    iteration: int
    candidate: int
    prompt: str
    env_id: str
    llm_model: str
    reward: RewardArtifact
    criteria: list[Criterion]


class ReviewResult(_Model):
    lgtm: bool
    notes: str  # what the reviewer found, one or two sentences
    reward: RewardArtifact  # the corrected reward when not LGTM, else the one reviewed
    usage: LLMCall | None = None


class FixRequest(_Model):
    session_id: str
    iteration: int
    candidate: int
    kind: Literal["reward", "judge"]
    prompt: str
    env_id: str
    llm_model: str
    code_key: str
    error: str
    attempt: int  # the attempt that failed (1-based)
    criteria: list[Criterion] = Field(default_factory=list)


class FixResult(_Model):
    key: str
    latex: str = ""
    terms: list[str] = Field(default_factory=list)
    summary: str = ""
    usage: LLMCall | None = None


class ValidateRequest(_Model):
    env_id: str
    reward_key: str
    steps: int = 64
    seed: int = 0


class VisualCriterion(_Model):
    name: str
    look_for: str  # what someone watching the video checks


class VisualCriteriaRequest(_Model):
    session_id: str
    prompt: str
    llm_model: str


class VisualCriteria(_Model):
    criteria: list[VisualCriterion]
    usage: LLMCall | None = None


class VlmJudgeRequest(_Model):
    session_id: str
    prompt: str
    llm_model: str
    video_key: str
    criteria: list[VisualCriterion]
    frames: int = 8  # for models that take images but not video


class VisualVerdict(_Model):
    name: str
    verdict: Literal["met", "partly", "not_met"]
    score: float
    reason: str


class VisualJudgment(_Model):
    score: float  # mean of the verdicts' scores (met 1, partly 0.5, not met 0)
    verdicts: list[VisualVerdict]
    shown: str  # "video" or "<n> frames"
    usage: LLMCall | None = None


class ValidateJudgeRequest(_Model):
    env_id: str
    judge_key: str
    reward_key: str  # the trajectory it is tried on carries this reward's terms
    criteria: list[str] = Field(default_factory=list)
    steps: int = 100
    seed: int = 0


class ValidateResult(_Model):
    ok: bool
    error: str | None = None
    steps: int = 0
    # Mean absolute value of each reward term over the validation steps.
    term_magnitudes: dict[str, float] = Field(default_factory=dict)


class TrainRequest(_Model):
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


class TrainResult(_Model):
    run_prefix: str  # sessions/<sid>/iter_<n>/<run_name>/
    model_key: str
    vecnormalize_key: str
    timesteps_done: int
    mean_episode_return: float | None = None  # under the session's reward
    mean_env_return: float | None = None  # under the env's own reward, for reference
    term_means: dict[str, float] = Field(default_factory=dict)  # per-step mean of each term
    wall_seconds: float = 0.0
    steps_per_second: float = 0.0
    # Training still improving at the end (last quarter's returns above the previous quarter's).
    still_improving: bool = False
    # The timestep counter this run resumed from after a worker died (None: ran in one go).
    resumed_from_timesteps: int | None = None


class EvalRequest(_Model):
    env_id: str
    reward_key: str
    run_prefix: str
    model_key: str
    vecnormalize_key: str
    seed: int = 0
    max_steps: int | None = None
    record_video: bool = True
    algo: str = "ppo"


class EvalResult(_Model):
    video_key: str | None
    trajectory_key: str
    episode_return: float
    env_return: float
    episode_length: int
    terminated: bool


class JudgeRequest(_Model):
    env_id: str
    trajectory_key: str
    criteria: list[Criterion]
    pass_threshold: float
    # LLM-written judge code (run in a child process); None: the built-in code judge.
    judge_key: str | None = None


class CriterionScore(_Model):
    name: str
    metric: str
    value: float
    target: float
    direction: str
    score: float  # in [0, 1]


class Judgment(_Model):
    score: float  # in [0, 1]
    passed: bool
    diagnosis: str
    criteria: list[CriterionScore] = Field(default_factory=list)
    failure_tags: list[str] = Field(default_factory=list)
    # Set when a VLM judge also watched the video (see workflows/synthesis.py).
    code_score: float | None = None
    visual_score: float | None = None
    # The same judge on the run's evaluation checkpoints: percent of training -> mean score of
    # its p10/median/p90 episodes (how the behaviour developed).
    checkpoints: dict[str, float] = Field(default_factory=dict)


# --- agents that use tools over several calls -----------------------------------------------
# One LLM call is one activity: between calls the conversation lives in S3 and the workflow runs
# the tools the model asked for as activities of their own.

MAX_TOOL_ROUNDS = 4  # rounds of tool calls before the agent is made to submit its answer
MAX_TOOL_CALLS = 4  # tool calls run per round; further ones are answered "skipped"


class ToolCallRef(_Model):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.arguments.items())
        return f"{self.name}({args})"[:120]


class ToolOutcome(_Model):
    call_id: str
    name: str
    key: str | None = None  # the result's text in S3; None: `summary` is the whole result
    is_error: bool = False
    summary: str = ""
    usage: LLMCall | None = None  # when answering took an LLM call (ask_video)


class ToolRequest(_Model):
    """One tool call of an agent, run by the judge pool (reads S3 and trajectories only)."""

    session_id: str
    env_id: str
    call: ToolCallRef
    result_key: str
    history_key: str | None = None  # the reviser's view of the session (history.json)
    trajectory_key: str | None = None  # the rollout the judges disagree about


SYNTH_TOOL_ROUNDS = 2  # the synthesizer's rounds of tool calls when the judges disagree


class SynthesisRequest(_Model):
    """The trajectory judge and the video judge disagree about one rollout: settle it."""

    session_id: str
    prompt: str
    env_id: str
    llm_model: str
    code: Judgment
    visual: VisualJudgment
    visual_criteria: list[VisualCriterion]
    video_key: str
    trajectory_key: str
    folder: str  # where the conversation and tool answers go (<run_prefix>synthesis/)
    transcript_key: str | None = None
    tool_outcomes: list[ToolOutcome] = Field(default_factory=list)
    round: int = 0
    final: bool = False


class SynthesisResult(_Model):
    done: bool = True
    score: float | None = None  # the settled intent score (kept between the two judges')
    trusted: Literal["trajectory", "video", "both"] = "both"
    diagnosis: str = ""
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    transcript_key: str | None = None
    usage: LLMCall | None = None


class AskVideoRequest(_Model):
    """An agent's question about a time window of a rollout's video, for the video model."""

    prompt: str
    llm_model: str
    video_key: str
    call: ToolCallRef  # ask_video(question, start_s, end_s)
    result_key: str
    frames: int = 6


class IterationEvidence(_Model):
    """An iteration's winning reward with the training and judgment of its best run."""

    iteration: int
    reward: RewardArtifact
    judgment: Judgment
    train: TrainResult


class ReviseRequest(_Model):
    session_id: str
    iteration: int  # the iteration the revised reward is for
    prompt: str
    env_id: str
    llm_model: str
    reward: RewardArtifact  # the last iteration's winning reward, its judgment and training
    criteria: list[Criterion]
    judgment: Judgment
    train: TrainResult
    timesteps: int
    timesteps_cap: int
    candidate: int = 0
    candidates: int = 1
    # What people said since the last revision (give_feedback / feedback signal).
    feedback: list[str] = Field(default_factory=list)
    # Every iteration so far, and the best one when it is not the last (a base to rebase on).
    history: list[IterationRecord] = Field(default_factory=list)
    best: IterationEvidence | None = None
    algo: str = "ppo"
    # The conversation so far (None: the first call) and the results of the tools it asked for.
    transcript_key: str | None = None
    tool_outcomes: list[ToolOutcome] = Field(default_factory=list)
    round: int = 0
    final: bool = False  # no more tools: the model must submit


class ReviseResult(_Model):
    # done: the revision below; not done: the tools the model asked for, to run and answer.
    done: bool = True
    reward: RewardArtifact | None = None
    timesteps: int = 0
    changes: str = ""  # one or two sentences: what changed and why
    diagnosis: str = ""
    base_iteration: int | None = None  # the iteration whose reward this one revises
    config: str | None = None  # the hyperparameter config asked for next (PPO)
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    transcript_key: str | None = None
    history_key: str | None = None  # what the tools read the session's iterations from
    usage: LLMCall | None = None


# --- session state and result --------------------------------------------------------------


class RunRecord(_Model):
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


class IterationRecord(_Model):
    iteration: int
    reward_key: str
    reward_summary: str
    latex: str
    timesteps: int
    score: float
    passed: bool
    diagnosis: str
    failure_tags: list[str] = Field(default_factory=list)
    best_run: RunRecord
    runs: int = 1
    changes: str | None = None  # what the reviser changed to produce this iteration's reward
    review_notes: str | None = None  # what the reviewer corrected before training
    candidate: int = 0  # the reward candidate that won this iteration
    candidates: int = 1
    config: str = "default"  # the hyperparameter config that won
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    training_seconds: float = 0.0
    # How the reviser got here: the iteration it revised, what it looked up, what people said.
    based_on: int | None = None
    tools_used: list[str] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)


class SessionStatus(_Model):
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
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    training_seconds: float = 0.0
    note: str | None = None  # e.g. which budget ran out
    approval: str = "none"
    awaiting_approval: int | None = None  # the iteration waiting for a person, if any
    pending_rewards: list[RewardArtifact] = Field(default_factory=list)  # what awaits approval
    feedback_pending: int = 0
    signal_errors: list[str] = Field(default_factory=list)  # invalid signals, newest last
    runs: int = 1  # workflow runs so far: a long session continues as new between iterations


class SessionCarry(_Model):
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


class SessionResult(_Model):
    session_id: str
    status: Literal["passed", "not_passed", "budget_exhausted", "aborted"]
    passed: bool
    model_label: str
    # None only when a budget ran out before the first iteration was judged.
    best_iteration: int | None
    best_score: float | None
    best: IterationRecord | None
    iterations: list[IterationRecord]
    criteria: list[Criterion] = Field(default_factory=list)
    llm_usage: LLMUsage = Field(default_factory=LLMUsage)
    training_seconds: float = 0.0
    note: str | None = None


class TrainProgress(_Model):
    """Heartbeat details of a training activity: what a retry resumes from."""

    timesteps: int
    mean_return: float | None = None
    # The latest checkpoint in S3 (a folder prefix) and its timestep counter.
    checkpoint_key: str | None = None
    checkpoint_timesteps: int | None = None


ReviseRequest.model_rebuild()
