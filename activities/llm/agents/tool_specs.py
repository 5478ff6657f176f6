"""The tools agents may call between their LLM calls (run by the workflow as activities).

The reviser looks through the session's history; the synthesizer, when the trajectory judge and
the video judge disagree, asks the video model about a stretch of time or measures the
trajectory there. Names here are what `activities/judging/session_tools.py` runs.
"""

from __future__ import annotations

from activities.llm.providers.base import ToolSpec

_ITERATION = {"type": "integer", "description": "the iteration number (1 is the first)"}
_WINDOW = {
    "start_s": {"type": "number", "description": "from this time in the episode, seconds"},
    "end_s": {"type": "number", "description": "to this time, seconds (omit: the end)"},
}
_FIELDS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "trajectory fields: info_<key>, term_<name>, reward, env_reward, "
    "qpos[<i>], qvel[<i>], action[<i>] (omit: every info_ and term_ field)",
}


def _of_iteration(name: str, description: str) -> ToolSpec:
    schema = {"type": "object", "properties": {"iteration": _ITERATION}, "required": ["iteration"]}
    return ToolSpec(name=name, description=description, input_schema=schema)


READ_REWARD = _of_iteration("read_reward", "The reward code that won an earlier iteration.")
READ_JUDGMENT = _of_iteration(
    "read_judgment",
    "An iteration's judgment: score, diagnosis, each criterion's measurement, the failure tags "
    "and the scores at the evaluation checkpoints during training.",
)
READ_TRAINING = _of_iteration(
    "read_training",
    "How an iteration's training went: returns and per-term reward means over the run (about "
    "ten points), losses, entropy, hyperparameters.",
)
TRAJECTORY_STATS = ToolSpec(
    name="trajectory_stats",
    description="Statistics (mean, min, max, first, last) of fields of an iteration's "
    "evaluation episode, optionally over a time window.",
    input_schema={
        "type": "object",
        "properties": {"iteration": _ITERATION, "fields": _FIELDS, **_WINDOW},
        "required": ["iteration"],
    },
)
REVISER_TOOLS = [READ_REWARD, READ_JUDGMENT, READ_TRAINING, TRAJECTORY_STATS]

MEASURE_WINDOW = ToolSpec(
    name="measure_window",
    description="Statistics (mean, min, max, first, last) of fields of the disputed episode's "
    "trajectory, optionally over a time window.",
    input_schema={"type": "object", "properties": {"fields": _FIELDS, **_WINDOW}},
)
ASK_VIDEO = ToolSpec(
    name="ask_video",
    description="Ask the video judge a question about a time window of the episode's video; it "
    "looks at frames from that window only.",
    input_schema={
        "type": "object",
        "properties": {"question": {"type": "string"}, **_WINDOW},
        "required": ["question", "start_s"],
    },
)
SYNTHESIZER_TOOLS = [MEASURE_WINDOW, ASK_VIDEO]
