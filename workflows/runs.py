"""One iteration's training fan-out: candidates x configs x seeds trained in parallel, each run
evaluated and judged (and watched by the video judge, with the synthesizer settling a
disagreement), and the winner chosen; the session's evidence and best run follow."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import activities as act
    from workflows.contracts import keys
    from workflows.contracts.judging import Judgment, VisualCriteria
    from workflows.contracts.llm import SynthesisRequest, SynthesisResult, VlmJudgeRequest
    from workflows.contracts.session import (
        IterationEvidence,
        IterationRecord,
        RunRecord,
        RunResult,
    )
    from workflows.contracts.training import (
        BatchMemberRef,
        EvalResult,
        RewardArtifact,
        TrainResult,
    )
    from workflows.step_base import failure_line
    from workflows.steps import Steps
    from workflows.synthesis import disagree, synthesize, verdicts_conflict, without_video


# Several runs of one seed trained in one process (train_batch) instead of one each.
BATCH_PATCH = "batched-training"
# The video judge is a witness: its failure (or the synthesizer's) after its retries leaves
# the run judged by the code judge instead of failing the session. Histories recorded before
# failed there, and still do (the marker is only asked for on that failure).
WITNESS_FALLBACK_PATCH = "video-judge-outage-falls-back"
# A visual criterion not met where the code judge passed goes to the synthesizer, and the
# pass stands only when it trusts the trajectory (workflows/synthesis.py). Histories recorded
# before kept the code judge's verdict without asking (the marker is only asked for then).
VISUAL_VETO_PATCH = "visual-not-met-is-settled"


async def train_and_judge(steps: Steps, rewards: list[RewardArtifact]) -> IterationRecord:
    """Train every candidate x config x seed of this iteration in parallel, evaluate and judge
    each run; the (candidate, config) with the best mean score over its seeds wins, represented
    by its best run."""
    state, inp = steps.state, steps.inp
    iteration, timesteps = state.iteration, state.timesteps
    state.stage("training")
    init = state.best_run if inp.warm_start else None
    runs_to_do = [
        (k, config, seed)
        for k in range(len(rewards))
        for config in state.configs
        for seed in range(inp.seeds)
    ]
    per_seed = len(rewards) * len(state.configs)
    # Several runs per seed train together in one process per batch shape (PPO only, and not
    # when they start from a previous policy: each loads it alone). Checked before patched():
    # histories recorded without batching never reach the marker.
    batched = (
        per_seed > 1
        and inp.runs_on_engine
        and (init is None or not inp.warm_start)
        and workflow.patched(BATCH_PATCH)
    )
    if batched:
        trained = await _train_batches(steps, rewards, runs_to_do)
        done = await asyncio.gather(
            *(
                _after_batch(steps, k, rewards[k], seed, config, trained[(k, config, seed)])
                for k, config, seed in runs_to_do
            )
        )
    else:
        done = await asyncio.gather(
            *(_one_run(steps, k, rewards[k], seed, config, init) for k, config, seed in runs_to_do)
        )
    # A candidate whose code the fixer repaired mid-iteration is recorded with the fixed code.
    for (k, _, _), (_, fixed) in zip(runs_to_do, done, strict=True):
        rewards[k] = fixed
    runs = [run for run, _ in done]
    groups: dict[tuple[int, str], list[tuple[RunRecord, TrainResult, Judgment]]] = {}
    for (k, config, _), run in zip(runs_to_do, runs, strict=True):
        groups.setdefault((k, config), []).append(run)
    means = {g: sum(r[2].score for r in rs) / len(rs) for g, rs in groups.items()}
    passes = {g: sum(r[2].passed for r in rs) for g, rs in groups.items()}
    # A passing run beats any score (the verdict is every criterion met; the score is
    # progress); ties go to the earlier candidate and config (the preset before its variants).
    order = {g: i for i, g in enumerate(groups)}
    winner = max(means, key=lambda g: (passes[g], means[g], -order[g]))
    best_run, best_train, best_judgment = max(
        groups[winner], key=lambda r: (r[2].passed, r[2].score)
    )
    candidate, config = winner
    state.evidence[iteration] = IterationEvidence(
        iteration=iteration,
        reward=rewards[candidate],
        judgment=best_judgment,
        train=best_train,
    )
    if state.best_run is None or (best_run.passed, best_run.score) >= (
        state.best_run.passed,
        state.best_run.score,
    ):
        state.best_run = best_run
    notes = []
    if inp.seeds > 1:
        notes.append(f"mean over {inp.seeds} seeds: {means[winner]:.2f}")
    if len(groups) > 1:
        notes.append(
            f"candidate {candidate}, config {config} won; group means "
            + ", ".join(f"c{k}/{c} {m:.2f}" for (k, c), m in means.items())
        )
    reward = rewards[candidate]
    return IterationRecord(
        iteration=iteration,
        reward_key=reward.key,
        reward_summary=reward.summary,
        latex=reward.latex,
        timesteps=timesteps,
        score=best_judgment.score,
        passed=best_judgment.passed,
        diagnosis=best_judgment.diagnosis + (f" ({'; '.join(notes)})" if notes else ""),
        failure_tags=best_judgment.failure_tags,
        code_score=best_judgment.code_score,
        visual_score=best_judgment.visual_score,
        video_note=best_judgment.video_note,
        best_run=best_run,
        runs=len(runs),
        candidate=candidate,
        candidates=len(rewards),
        run_results=[
            RunResult(
                candidate=k,
                config=config,
                seed=seed,
                mean_return=run[1].mean_episode_return,
                mean_env_return=run[1].mean_env_return,
                score=run[2].score,
                passed=run[2].passed,
            )
            for (k, config, seed), run in zip(runs_to_do, runs, strict=True)
        ],
        batched=batched,
        config=config,
        timesteps_used=best_train.timesteps_done,
        stopped_at_pct=best_train.stopped_at_pct,
        criteria=best_judgment.criteria,
    )


async def _one_run(
    steps: Steps,
    candidate: int,
    reward: RewardArtifact,
    seed: int,
    config: str,
    init: RunRecord | None,
) -> tuple[tuple[RunRecord, TrainResult, Judgment], RewardArtifact]:
    """One run: train, evaluate, judge from the trajectory (and the video, when on); the reward
    it trained with (a reward that failed in training goes to the fixer and trains again)."""
    state = steps.state
    run_name = keys.run_name(candidate, config, seed)
    while True:
        try:
            trained = await steps.train(
                state.iteration, run_name, reward, state.timesteps, seed, config, init
            )
        except ActivityError as exc:
            error = steps.code_fault(exc, "reward")
            if error is None:
                raise
            reward = await steps.refix_reward(state.iteration, candidate, reward, error)
            continue
        if trained.fault is None:
            break
        # Trained (its model and summary kept), but its sandbox answered the end-of-training
        # counts out of format: the code's fault, fixed like a batch member's.
        reward = await _refix_fault(steps, candidate, reward, trained.fault)
    judged = await _evaluate_and_judge(steps, candidate, reward, seed, config, trained)
    return judged, reward


async def _after_batch(
    steps: Steps,
    candidate: int,
    reward: RewardArtifact,
    seed: int,
    config: str,
    trained: TrainResult,
) -> tuple[tuple[RunRecord, TrainResult, Judgment], RewardArtifact]:
    """A batch member evaluated and judged; one whose reward failed mid-batch (the others
    trained on) is fixed and trained again on its own."""
    if trained.fault is None:
        return await _evaluate_and_judge(steps, candidate, reward, seed, config, trained), reward
    fixed = await _refix_fault(steps, candidate, reward, trained.fault)
    return await _one_run(steps, candidate, fixed, seed, config, None)


async def _refix_fault(
    steps: Steps, candidate: int, reward: RewardArtifact, fault: str
) -> RewardArtifact:
    """The reward fixed for a fault its run reported after training (within the budget)."""
    iteration = steps.state.iteration
    return await steps.refix_reward(
        iteration, candidate, reward, steps.member_fault(iteration, fault)
    )


async def _train_batches(
    steps: Steps, rewards: list[RewardArtifact], runs_to_do: list[tuple[int, str, int]]
) -> dict[tuple[int, str, int], TrainResult]:
    """Each seed's runs trained together (one train_batch per seed, at once)."""
    state = steps.state
    seeds = sorted({seed for _, _, seed in runs_to_do})

    async def one_seed(seed: int) -> list[tuple[tuple[int, str, int], TrainResult]]:
        todo = [(k, c, s) for k, c, s in runs_to_do if s == seed]
        members = [
            BatchMemberRef(run_name=keys.run_name(k, c, s), reward_key=rewards[k].key, config=c)
            for k, c, s in todo
        ]
        results = await steps.train_batch(state.iteration, members, state.timesteps, seed)
        return list(zip(todo, results, strict=True))

    done = await asyncio.gather(*(one_seed(seed) for seed in seeds))
    return {run: result for pairs in done for run, result in pairs}


async def _evaluate_and_judge(
    steps: Steps,
    candidate: int,
    reward: RewardArtifact,
    seed: int,
    config: str,
    trained: TrainResult,
) -> tuple[RunRecord, TrainResult, Judgment]:
    """A trained run evaluated, then judged from the trajectory (and the video, when on)."""
    state = steps.state
    run_name = keys.run_name(candidate, config, seed)
    state.stage("evaluating", timesteps_done=trained.timesteps_done)
    evaluated = await steps.evaluate(reward, trained, seed)
    state.stage("judging")
    while True:
        judge = state.judge
        try:
            judgment = await steps.judge(evaluated, state.criteria, judge)
            break
        except ActivityError as exc:
            error = steps.code_fault(exc, "judge")
            if error is None or judge is None:
                raise
            await steps.refix_judge(judge, reward.key, error)
    visual = state.visual_criteria
    if visual is not None and evaluated.video_key:
        judgment = await _witnessed(
            steps, judgment, visual, evaluated.video_key, evaluated, trained
        )
    run = RunRecord(
        run_name=run_name,
        seed=seed,
        run_prefix=trained.run_prefix,
        model_key=trained.model_key,
        vecnormalize_key=trained.vecnormalize_key,
        video_key=evaluated.video_key,
        trajectory_key=evaluated.trajectory_key,
        timesteps_done=trained.timesteps_done,
        score=judgment.score,
        passed=judgment.passed,
    )
    return run, trained, judgment


async def _witnessed(
    steps: Steps,
    judgment: Judgment,
    visual: VisualCriteria,
    video_key: str,
    evaluated: EvalResult,
    trained: TrainResult,
) -> Judgment:
    """The code judge's judgment with the video judge's verdicts (told the criteria the code
    judge measures and their targets), the synthesizer settling a disagreement. A video judge
    or synthesizer that fails after its retries (an outage, a refusal) costs its say, never
    the run: the judgment says which was unavailable and why. Cancellation goes through."""
    state, inp = steps.state, steps.inp
    try:
        seen = await steps.llm(
            act.VLM_JUDGE,
            VlmJudgeRequest(
                session_id=steps.session_id,
                prompt=inp.prompt,
                llm_model=inp.llm_model,
                video_key=video_key,
                criteria=visual.criteria,
                measured=state.criteria,
                env_id=inp.env_id,
            ),
        )
    except ActivityError as exc:
        if is_cancelled_exception(exc) or not workflow.patched(WITNESS_FALLBACK_PATCH):
            raise
        return without_video(judgment, f"video judge unavailable: {failure_line(exc)}")
    # Asked only when the verdicts conflict: histories without a conflict never see it.
    conflict = verdicts_conflict(judgment, seen) and workflow.patched(VISUAL_VETO_PATCH)
    settled: SynthesisResult | None = None
    note = None
    if disagree(judgment, seen) or conflict:
        state.stage("synthesizing")
        try:
            settled = await steps.settle(
                SynthesisRequest(
                    session_id=steps.session_id,
                    prompt=inp.prompt,
                    env_id=inp.env_id,
                    llm_model=inp.llm_model,
                    code=judgment,
                    visual=seen,
                    visual_criteria=visual.criteria,
                    video_key=video_key,
                    trajectory_key=evaluated.trajectory_key,
                    folder=keys.synthesis_folder(trained.run_prefix),
                )
            )
        except ActivityError as exc:
            if is_cancelled_exception(exc) or not workflow.patched(WITNESS_FALLBACK_PATCH):
                raise
            note = f"synthesizer unavailable: {failure_line(exc)}"
    return synthesize(judgment, seen, inp.pass_threshold, settled, witness=conflict, note=note)
