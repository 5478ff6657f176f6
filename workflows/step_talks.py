"""Steps that talk with a model: a revision or a synthesis as a conversation, with the
read-only tools it may call between its turns."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.contracts import activities as act
    from workflows.contracts import keys
    from workflows.contracts.activities import ActivityRef
    from workflows.contracts.llm import (
        ReviseRequest,
        ReviseResult,
        SynthesisRequest,
        SynthesisResult,
    )
    from workflows.contracts.tools import (
        MAX_TOOL_CALLS,
        MAX_TOOL_ROUNDS,
        SYNTH_TOOL_ROUNDS,
        AskVideoRequest,
        ToolCallRef,
        ToolOutcome,
        ToolRequest,
    )
    from workflows.step_base import SHORT_RETRY, StepsBase

Conversing = TypeVar("Conversing", ReviseRequest, SynthesisRequest)
Answer = TypeVar("Answer", ReviseResult, SynthesisResult)


class TalkSteps(StepsBase):
    """Revisions and syntheses, and the tools they call."""

    async def revise(self, req: ReviseRequest) -> tuple[ReviseResult, list[str]]:
        """The reviser's calls, running the tools it asks for in between (at most
        MAX_TOOL_ROUNDS rounds, then it must submit); the revision and the tools it used."""

        async def tools(result: ReviseResult, round_: int) -> list[ToolOutcome]:
            assert result.transcript_key is not None
            return await self.run_tools(
                "reviser",
                result.tool_calls,
                result.transcript_key,
                round_,
                history_key=result.history_key,
            )

        # The history goes with the first call only; the activity keeps it in S3.
        return await self._converse(act.REVISE_REWARD, req, MAX_TOOL_ROUNDS, tools, {"history": []})

    async def settle(self, req: SynthesisRequest) -> SynthesisResult:
        """The synthesizer's calls when the judges disagree, with its tools in between (at most
        SYNTH_TOOL_ROUNDS rounds)."""

        async def ask_video(call: ToolCallRef, key: str) -> ToolOutcome:
            return await self.llm(
                act.ASK_VIDEO,
                AskVideoRequest(
                    prompt=self.inp.prompt,
                    llm_model=self.inp.llm_model,
                    video_key=req.video_key,
                    call=call,
                    result_key=key,
                ),
                summary=f"synthesizer asks the video model: {call.label()}",
            )

        async def tools(result: SynthesisResult, round_: int) -> list[ToolOutcome]:
            assert result.transcript_key is not None
            return await self.run_tools(
                "synthesizer",
                result.tool_calls,
                result.transcript_key,
                round_,
                trajectory_key=req.trajectory_key,
                ask_video=ask_video,
            )

        settled, _ = await self._converse(
            act.SYNTHESIZE_JUDGMENT, req, SYNTH_TOOL_ROUNDS, tools, {}
        )
        return settled

    async def _converse(
        self,
        ref: ActivityRef[Conversing, Answer],
        req: Conversing,
        rounds: int,
        tools: Callable[[Answer, int], Awaitable[list[ToolOutcome]]],
        after_first: dict[str, Any],
    ) -> tuple[Answer, list[str]]:
        """An agent's LLM calls, one activity each, with the tools it asked for run in between;
        the last call may only submit. Its answer and the tool calls it made."""
        used: list[str] = []
        for round_ in range(rounds + 1):
            call = req.model_copy(update={"round": round_, "final": round_ == rounds})
            result = await self.llm(ref, call)
            if result.done:
                return result, used
            used += [c.label() for c in result.tool_calls]
            outcomes = await tools(result, round_)
            req = req.model_copy(
                update={
                    "transcript_key": result.transcript_key,
                    "tool_outcomes": outcomes,
                    **after_first,
                }
            )
        raise AssertionError("unreachable: the final call offers only the submit tool")

    async def run_tools(
        self,
        agent: str,
        calls: list[ToolCallRef],
        transcript_key: str,
        round_: int,
        *,
        history_key: str | None = None,
        trajectory_key: str | None = None,
        ask_video: Callable[[ToolCallRef, str], Awaitable[ToolOutcome]] | None = None,
    ) -> list[ToolOutcome]:
        """One round of an agent's tool calls, in parallel; each answer lands next to the
        conversation in S3. Calls beyond MAX_TOOL_CALLS are answered without running."""
        folder = keys.folder_of(transcript_key)

        async def one(i: int, call: ToolCallRef) -> ToolOutcome:
            if i >= MAX_TOOL_CALLS:
                return ToolOutcome(
                    call_id=call.id,
                    name=call.name,
                    is_error=True,
                    summary=f"skipped: at most {MAX_TOOL_CALLS} tool calls per round",
                )
            key = keys.tool_result_key(folder, round_, i)
            if call.name == "ask_video" and ask_video is not None:
                return await ask_video(call, key)
            return await self.call(
                act.SESSION_TOOL,
                ToolRequest(
                    session_id=self.session_id,
                    env_id=self.inp.env_id,
                    call=call,
                    result_key=key,
                    history_key=history_key,
                    trajectory_key=trajectory_key,
                ),
                summary=f"{agent} looks up {call.label()}",
                retry=SHORT_RETRY,
            )

        return list(await asyncio.gather(*(one(i, c) for i, c in enumerate(calls))))

    # --- train, evaluate, judge --------------------------------------------------------------
