"""An agent's answer, taken in whatever unambiguous form the model sent it, and repaired in the
same conversation when it cannot be taken: the model is told what was wrong (the parse error,
the tool it should have called, that its reply was cut at the token limit), a bounded number of
times, and every call made on the way is counted.

Forms taken as the submit tool's arguments, besides the submit tool itself: one call of another
tool whose arguments hold the submit tool's required fields, or (for code) exactly one string
argument that is Python; a JSON object in the text; fenced or unfenced Python in the text; a
list or object sent as a JSON-encoded string.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import structlog
from temporalio.exceptions import ApplicationError

from activities.llm.agents import calls as calls_
from activities.llm.providers.base import Completion, Message, ToolCall, ToolResult, ToolSpec
from workflows.contracts.usage import LLMCall, merged_calls

T = TypeVar("T")

# Replies in the wrong form answered in the same conversation before the agent's stage gives up
# on it (each is one more paid call, counted).
REPAIRS = 2
# A reply cut at the token limit is asked again with twice the limit, up to this many tokens.
MAX_TOKENS_CAP = 32_768


# What the session's cost cap leaves for this activity's calls (None: no cap), set from the
# request by `within_cost`: a repair starts only while the calls so far leave room for one more.
COST_LEFT: ContextVar[float | None] = ContextVar("cost_left", default=None)

F = TypeVar("F", bound=Callable[..., Any])


def within_cost(fn: F) -> F:
    """An LLM activity whose repairs stay within the request's `cost_left_usd`."""

    @functools.wraps(fn)
    def run(req: Any) -> Any:
        token = COST_LEFT.set(getattr(req, "cost_left_usd", None))
        try:
            return fn(req)
        finally:
            COST_LEFT.reset(token)

    return run  # type: ignore[return-value]


class WrongForm(Exception):
    """What was wrong with a reply, in words meant for the model that sent it."""

    def __init__(self, problem: str, *, cut: bool = False, advice: str = "") -> None:
        super().__init__(problem)
        self.cut, self.advice = cut, advice


class Declined(Exception):
    """The model declined the task (a refusal stop, or its answer's refusal field)."""


def wrong_form(message: str) -> ApplicationError:
    """The error an agent's parser raises for an answer it cannot use (repaired by `converse`;
    after the last repair, the stage's failure)."""
    return ApplicationError(message, type="LLMBadAnswer")


@dataclass
class Reply(Generic[T]):
    """An agent's answer after repairs: its parsed value (None when the model asked for lookup
    tools instead), the calls it made, and the conversation after it."""

    value: T | None
    arguments: dict[str, Any]
    call: LLMCall
    messages: list[Message] = field(default_factory=list)
    lookups: tuple[ToolCall, ...] = ()


def converse(
    agent: str,
    model: str,
    messages: list[Message],
    *,
    system: str,
    submit: ToolSpec,
    parse: Callable[[dict[str, Any]], T],
    lookups: list[ToolSpec] | None = None,
    temperature: float | None = 0.0,
) -> Reply[T]:
    """Call the model until its reply parses, telling it what was wrong each time (at most
    REPAIRS times). A reply that calls lookup tools (when offered) is returned for the caller to
    run. Raises a non-retryable LLMBadAnswer carrying every call's accounting when no reply
    parses, and LLMRefused when the model declines."""
    offered = [*(lookups or []), submit]
    lookup_names = {t.name for t in lookups or []}
    calls: list[LLMCall] = []
    limit = calls_.MAX_TOKENS
    problem = ""
    for _ in range(REPAIRS + 1):
        if calls and not _affordable(calls):
            raise ApplicationError(
                f"{agent}: no usable answer in {len(calls)} calls, and another would pass the "
                f"session's LLM cost cap; the last: {problem}",
                merged_calls(calls).model_dump(),
                type="LLMBadAnswer",
                non_retryable=True,
            )
        completion, call = calls_.call_model(
            agent,
            model,
            messages,
            system=system,
            tools=offered,
            temperature=temperature,
            max_tokens=limit,
        )
        calls.append(call)
        try:
            args = recognise(completion, submit, lookup_names, limit)
            if args is None:
                assistant = _assistant(completion)
                return Reply(
                    None,
                    {},
                    merged_calls(calls),
                    [*messages, assistant],
                    completion.tool_calls,
                )
            value = parse(args)
        except Declined as exc:
            raise ApplicationError(
                f"refused: {_line(str(exc))}",
                merged_calls(calls).model_dump(),
                type="LLMRefused",
                non_retryable=True,
            ) from None
        except WrongForm as exc:
            problem, cut, advice = str(exc), exc.cut, exc.advice
        except ApplicationError as exc:
            if exc.type != "LLMBadAnswer":
                raise
            problem, cut, advice = exc.message, False, ""
        else:
            return Reply(value, args, merged_calls(calls), [*messages, _assistant(completion)])
        structlog.get_logger().warning(
            "answer in the wrong form", agent=agent, model=model, attempt=len(calls), told=problem
        )
        messages = [*messages, *_telling(completion, repair_text(problem, submit, advice))]
        if cut:
            limit = min(2 * limit, MAX_TOKENS_CAP)
    raise ApplicationError(
        f"{agent}: no usable answer in {len(calls)} calls; the last: {problem}",
        merged_calls(calls).model_dump(),
        type="LLMBadAnswer",
        non_retryable=True,
    )


def _affordable(calls: list[LLMCall]) -> bool:
    """Whether one more call like the dearest so far fits in what the cap left this activity."""
    left = COST_LEFT.get()
    costs = [c.cost_usd or 0.0 for c in calls]
    return left is None or sum(costs) + max(costs) <= left


def recognise(
    completion: Completion, submit: ToolSpec, lookups: set[str], limit: int
) -> dict[str, Any] | None:
    """The submit tool's arguments from a reply in any unambiguous form; None when the reply
    only calls lookup tools. Raises WrongForm saying what to send instead, Declined when the
    model refused."""
    if completion.stop_reason == "refusal":
        raise Declined(completion.text or "the provider stopped the answer as a refusal")
    if completion.stop_reason == "max_tokens":
        raise WrongForm(
            f"it was cut at the token limit ({limit:,} tokens) before it was complete",
            cut=True,
            advice=f"Keep the prose fields short (the limit is now "
            f"{min(2 * limit, MAX_TOKENS_CAP):,} tokens).",
        )
    direct = [c for c in completion.tool_calls if c.name == submit.name]
    if direct:
        return decoded(direct[0].arguments, submit)
    others = [c for c in completion.tool_calls if c.name not in lookups]
    if completion.tool_calls and not others:
        return None
    found = _from_other_tools(others, submit)
    if found is None:
        found = _from_text(completion.text or "", submit)
    if found is None:
        names = ", ".join(sorted({c.name for c in others}))
        if names:
            raise WrongForm(f"it called {names}, not {submit.name}, and held no answer")
        raise WrongForm(
            f"it held none of the {_fields(submit)} (it said {_snippet(completion.text)})"
        )
    return decoded(found, submit)


def decoded(args: dict[str, Any], submit: ToolSpec) -> dict[str, Any]:
    """The arguments with a list or object that came as a JSON-encoded string decoded (what the
    schema says is an array or object); anything else as sent (the agent's parser says what
    it misses)."""
    props = submit.input_schema.get("properties", {})
    out = dict(args)
    for name, spec in props.items():
        value = out.get(name)
        want = spec.get("type")
        if isinstance(value, str) and want in ("array", "object"):
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if isinstance(parsed, list if want == "array" else dict):
                out[name] = parsed
    return out


def _from_other_tools(calls: list[ToolCall], submit: ToolSpec) -> dict[str, Any] | None:
    """One other tool's arguments that hold every required field, or its one Python string as
    the code; None when no call or more than one qualifies."""
    required = set(submit.input_schema.get("required", []))
    whole = [c.arguments for c in calls if required and required <= set(c.arguments)]
    if len(whole) == 1:
        return dict(whole[0])
    if "code" not in submit.input_schema.get("properties", {}):
        return None
    code = [v for c in calls for v in c.arguments.values() if isinstance(v, str) and is_code(v)]
    return {"code": code[0]} if len(code) == 1 else None


def _from_text(text: str, submit: ToolSpec) -> dict[str, Any] | None:
    """A JSON object and/or Python code found in a text reply."""
    found: dict[str, Any] = dict(json_object(text) or {})
    if "code" in submit.input_schema.get("properties", {}) and "code" not in found:
        code = extract_code(text) or unfenced_code(text)
        if code:
            found["code"] = code
    return found or None


_CODE_START = re.compile(r"^(import |from \S+ import |class |def |@)")


def unfenced_code(text: str) -> str | None:
    """The longest run of lines in a text reply that is a Python module defining something
    (prose before or after it left out), or None."""
    lines = text.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:3]
    for i in starts:
        # Prose after the code is a few lines at most: bounded tries, whatever the length.
        for j in range(len(lines), max(i, len(lines) - 40), -1):
            block = "\n".join(lines[i:j])
            if is_code(block):
                return block.strip() + "\n"
    return None


def is_code(text: str) -> bool:
    """Whether a text is a Python module that defines something (not prose that parses)."""
    if "def " not in text and "class " not in text:
        return False
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in tree.body)


def repair_text(problem: str, submit: ToolSpec, advice: str = "") -> str:
    """What the model is told about a reply that was not taken."""
    return (
        f"Your answer was not accepted: {problem}. "
        + (f"{advice} " if advice else "")
        + f"Call the {submit.name} tool again with the whole answer ({_fields(submit)})."
    )


def _telling(completion: Completion, text: str) -> list[Message]:
    """The reply as the assistant's turn and what was wrong with it (`text`) as the answer:
    tool results when the reply called tools (every call must be answered), else a user turn."""
    assistant = _assistant(completion)
    if completion.tool_calls:
        results = tuple(
            ToolResult(c.id, text, is_error=True, name=c.name) for c in completion.tool_calls
        )
        return [assistant, Message(role="tool", tool_results=results)]
    return [assistant, Message(role="user", content=text)]


def _assistant(completion: Completion) -> Message:
    return Message(
        role="assistant",
        content=completion.text or ("" if completion.tool_calls else "(no answer)"),
        tool_calls=completion.tool_calls,
        thinking=completion.thinking,
    )


def _fields(submit: ToolSpec) -> str:
    required = submit.input_schema.get("required", [])
    return "fields " + ", ".join(required) if required else "its fields"


def _snippet(text: str, limit: int = 120) -> str:
    return repr(_line(text or "", limit))


def _line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str | None:
    """The longest fenced code block, or None."""
    blocks = _FENCE.findall(text or "")
    return max(blocks, key=len).strip() + "\n" if blocks else None


def json_object(text: str) -> dict[str, Any] | None:
    """A JSON object in a text reply (a ```json block, else the outermost braces), or None."""
    candidates = re.findall(r"```json\s*\n(.*?)```", text, re.DOTALL)
    if not candidates and "{" in text:
        candidates = [text[text.find("{") : text.rfind("}") + 1]]
    for raw in candidates:
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None
