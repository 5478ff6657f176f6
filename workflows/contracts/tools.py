"""Tool calls of agents that work over several LLM calls (the reviser, the synthesizer).

One LLM call is one activity: between calls the conversation lives in S3, and the workflow runs
the tools the model asked for as activities of their own (`session_tool` on the judge pool,
`ask_video` on the LLM pool), then hands their outcomes to the next call.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from workflows.contracts.context import Contract
from workflows.contracts.usage import LLMCall

MAX_TOOL_ROUNDS = 4  # rounds of tool calls before the agent is made to submit its answer
MAX_TOOL_CALLS = 4  # tool calls run per round; further ones are answered "skipped"
SYNTH_TOOL_ROUNDS = 2  # the synthesizer's rounds of tool calls when the judges disagree


class ToolCallRef(Contract):
    """A tool call an agent asked for: its id, the tool's name and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.arguments.items())
        return f"{self.name}({args})"[:120]


class ToolOutcome(Contract):
    """What session_tool and ask_video return: the answer to one tool call (its text in S3
    or in `summary`), handed to the agent's next LLM call."""

    call_id: str
    name: str
    key: str | None = None  # the result's text in S3; None: `summary` is the whole result
    is_error: bool = False
    summary: str = ""
    usage: LLMCall | None = None  # when answering took an LLM call (ask_video)


class ToolRequest(Contract):
    """One tool call of an agent, run by the judge pool (reads S3 and trajectories only)."""

    session_id: str
    env_id: str
    call: ToolCallRef
    result_key: str
    history_key: str | None = None  # the reviser's view of the session (history.json)
    trajectory_key: str | None = None  # the rollout the judges disagree about


class AskVideoRequest(Contract):
    """An agent's question about a time window of a rollout's video, for the video model."""

    prompt: str
    llm_model: str
    video_key: str
    call: ToolCallRef  # ask_video(question, start_s, end_s)
    result_key: str
    frames: int = 6
