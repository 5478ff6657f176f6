"""The reviser over several calls, with the real SDKs against the fake provider server.

Each `revise_reward` activity is one LLM call. The first asks for a tool; the test runs the
`session_tool` activity for it as the workflow would (result next to the conversation in S3) and
calls `revise_reward` again with the transcript and the outcome; the model then submits. What
must hold: the second request hands the tool's answer back in the provider's own wire format,
paired with the call it answers, and the submitted revision lands in S3 with its base iteration
and config.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.artifacts import ArtifactStore
from activities.judging.session_tools import session_tool
from activities.llm.activities import revise_reward
from tests.builders import FORWARD_REWARD, RUN_NAME, run_record
from tests.fakes.llm_server import FakeLLMServer, Recorded, Tools
from workflows.contracts.judging import Criterion, CriterionScore, Judgment
from workflows.contracts.keys import iteration_prefix, run_prefix
from workflows.contracts.llm import ReviseRequest, ReviseResult
from workflows.contracts.session import IterationEvidence, IterationRecord
from workflows.contracts.tools import ToolRequest
from workflows.contracts.training import RewardArtifact, TrainResult

MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.1", "gemini": "gemini-2.5-pro"}
KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-test-reviser",
    "OPENAI_API_KEY": "sk-proj-test-reviser",
    "GEMINI_API_KEY": "AIzaTest-reviser",
}
# Anything in the developer's shell that could reroute or re-authenticate the SDKs.
UNSET = [
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_API_VERSION",
    "POLICYFORGE_OPENAI_BASE_URL",
    "POLICYFORGE_LLM_MODEL",
]
ENV_ID = "HalfCheetah-v5"
PROMPT = "run forward as fast as possible"
REVISER_TOOLS = ["read_reward", "read_judgment", "read_training", "trajectory_stats"]

REWARD_1 = FORWARD_REWARD
# Iteration 2 tripled the control cost and did worse.
REWARD_2 = REWARD_1.replace("-0.1 *", "-0.3 *").replace("0.1 \\\\|", "0.3 \\\\|")
# The revision: back to iteration 1's reward with a gentler control cost.
REVISED = REWARD_1.replace("-0.1 *", "-0.05 *").replace("0.1 \\\\|", "0.05 \\\\|")


def _submit(base_iteration: Any = 1, config: Any = "entropy") -> dict[str, Any]:
    return {
        "diagnosis": "a control cost of 0.3 held the cheetah back; iteration 1 ran faster",
        "changes": "revised iteration 1's reward: control cost 0.1 -> 0.05",
        "base_iteration": base_iteration,
        "config": config,
        "timesteps": 80_000,
        "code": REVISED,
        "latex": r"r = v_x - 0.05 \|a\|^2",
        "terms": ["forward", "ctrl"],
        "summary": "forward speed minus a small control cost",
    }


# --- the session so far, in S3 ----------------------------------------------------------------

CRITERIA = [
    Criterion(
        name="forward_speed",
        description="It runs forward fast.",
        measure="mean of info_x_velocity over the episode, m/s",
        target=3.0,
    ),
    Criterion(
        name="calm_actions",
        description="It does not thrash.",
        measure="mean absolute action",
        target=0.5,
        direction="at_most",
    ),
]


def _judgment(speed: float, score: float) -> Judgment:
    return Judgment(
        score=score,
        passed=False,
        diagnosis=f"mean forward velocity {speed:.2f} m/s against a target of 3.00",
        criteria=[
            CriterionScore(
                name="forward_speed",
                metric="forward_speed",
                value=speed,
                target=3.0,
                direction="at_least",
                score=speed / 3.0,
            ),
            CriterionScore(
                name="calm_actions",
                metric="calm_actions",
                value=0.2,
                target=0.5,
                direction="at_most",
                score=1.0,
            ),
        ],
        failure_tags=["too_slow"],
    )


def _train(sid: str, n: int, ret: float) -> TrainResult:
    prefix = run_prefix(sid, n, RUN_NAME)
    return TrainResult(
        run_prefix=prefix,
        model_key=prefix + "model.zip",
        vecnormalize_key=prefix + "vecnormalize.npz",
        timesteps_done=50_176,
        mean_episode_return=ret,
        mean_env_return=ret * 0.8,
        term_means={"forward": ret / 1000, "ctrl": -0.05},
        wall_seconds=95.0,
        steps_per_second=528.0,
        still_improving=True,
    )


def _record(
    sid: str, n: int, reward: RewardArtifact, judgment: Judgment, train: TrainResult
) -> IterationRecord:
    run = run_record(
        sid, n, timesteps_done=train.timesteps_done, score=judgment.score, passed=judgment.passed
    )
    return IterationRecord(
        iteration=n,
        reward_key=reward.key,
        reward_summary=reward.summary,
        latex=reward.latex,
        timesteps=50_000,
        score=judgment.score,
        passed=judgment.passed,
        diagnosis=judgment.diagnosis,
        failure_tags=judgment.failure_tags,
        best_run=run,
        changes="control cost 0.1 -> 0.3" if n == 2 else None,
        based_on=1 if n == 2 else None,
    )


def _request(store: ArtifactStore, provider: str) -> ReviseRequest:
    """The request for iteration 3 after two iterations, the first of which scored best."""
    sid = f"revtools-{provider}-{uuid.uuid4().hex[:8]}"
    evidence = []
    for n, code, speed, score in ((1, REWARD_1, 1.8, 0.6), (2, REWARD_2, 0.9, 0.3)):
        key = store.put_text(iteration_prefix(sid, n) + "reward_fn.py", code)
        reward = RewardArtifact(
            key=key,
            latex=f"r = v_x - {0.1 * n:.1f}|a|^2",
            terms=["forward", "ctrl"],
            summary=f"forward speed minus {0.1 * n:.1f} x control cost",
        )
        evidence.append(
            IterationEvidence(
                iteration=n,
                reward=reward,
                judgment=_judgment(speed, score),
                train=_train(sid, n, 1000 * speed),
            )
        )
    best, last = evidence
    return ReviseRequest(
        session_id=sid,
        iteration=3,
        prompt=PROMPT,
        env_id=ENV_ID,
        llm_model=MODELS[provider],
        reward=last.reward,
        criteria=CRITERIA,
        judgment=last.judgment,
        train=last.train,
        timesteps=50_000,
        timesteps_cap=100_000,
        history=[_record(sid, e.iteration, e.reward, e.judgment, e.train) for e in evidence],
        best=best,
    )


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def fake(server: FakeLLMServer, s3: str, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    """The server, emptied, with every provider pointed at it (and S3 up)."""
    server.reset()
    for var in UNSET:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url("anthropic"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url("openai"))
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url("gemini"))
    monkeypatch.setenv("POLICYFORGE_LLM_TIMEOUT_S", "20")
    for var, secret in KEYS.items():
        monkeypatch.setenv(var, secret)
    return server


def _revise(req: ReviseRequest) -> ReviseResult:
    # Through JSON, as Temporal carries it between the workflow and the worker.
    sent = ReviseRequest.model_validate_json(req.model_dump_json())
    out = ActivityEnvironment().run(revise_reward, sent)
    return ReviseResult.model_validate_json(out.model_dump_json())


def _first_round(store: ArtifactStore, provider: str, **arguments: Any) -> tuple[Any, ...]:
    """Call 1 (the model asks for read_reward), then the tool as the workflow runs it."""
    req = _request(store, provider)
    first = _revise(req)
    assert not first.done and first.reward is None
    (call,) = first.tool_calls
    assert call.name == "read_reward" and call.arguments == arguments
    folder = iteration_prefix(req.session_id, 3) + "revision_c0/"
    assert first.transcript_key == folder + "turn_0.json"
    assert first.history_key == folder + "history.json"
    outcome = ActivityEnvironment().run(
        session_tool,
        ToolRequest(
            session_id=req.session_id,
            env_id=ENV_ID,
            call=call,
            result_key=folder + "tool_0_0.txt",
            history_key=first.history_key,
        ),
    )
    assert outcome.call_id == call.id and outcome.key == folder + "tool_0_0.txt"
    # The later calls carry the transcript and the outcomes, not the history (S3 has it).
    later = req.model_copy(
        update={
            "round": 1,
            "transcript_key": first.transcript_key,
            "tool_outcomes": [outcome],
            "history": [],
        }
    )
    return req, later, call, outcome


# --- reading what the SDKs sent ---------------------------------------------------------------


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    return d[camel] if camel in d else d[snake]


def _tool_names(provider: str, body: dict[str, Any]) -> list[str]:
    if provider == "anthropic":
        return [t["name"] for t in body["tools"]]
    if provider == "gemini":
        decls = _get(body["tools"][0], "functionDeclarations", "function_declarations")
        return [d["name"] for d in decls]
    return [t["function"]["name"] for t in body["tools"]]


def _answered_call(provider: str, request: Recorded, first_reply: dict[str, Any]) -> dict:
    """The replayed tool call and the tool result that answers it, from the second request:
    {"call": (id, name, arguments), "result": (id, name, text, is_error), "after": [...]}.
    `after` is the text the client added after the results (in the same turn or the next)."""
    body = request.body
    if provider == "anthropic":
        messages = body["messages"]
        i = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        (use,) = [b for b in messages[i]["content"] if b["type"] == "tool_use"]
        answer = messages[i + 1]
        assert answer["role"] == "user" and i + 2 == len(messages)
        result, *rest = answer["content"]
        assert result["type"] == "tool_result"
        return {
            "call": (use["id"], use["name"], use["input"]),
            "result": (result["tool_use_id"], use["name"], result["content"], result["is_error"]),
            "after": [b["text"] for b in rest if b["type"] == "text"],
        }
    if provider == "openai":
        messages = body["messages"]
        i = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        (tc,) = messages[i]["tool_calls"]
        answer = messages[i + 1]
        assert answer["role"] == "tool" and set(answer) == {"role", "tool_call_id", "content"}
        text = answer["content"]
        error = text.lower().startswith("error")
        return {
            "call": (tc["id"], tc["function"]["name"], json.loads(tc["function"]["arguments"])),
            "result": (answer["tool_call_id"], tc["function"]["name"], text, error),
            "after": [m["content"] for m in messages[i + 2 :] if m["role"] == "user"],
        }
    contents = body["contents"]
    i = next(i for i, c in enumerate(contents) if c["role"] == "model")
    (part,) = [p for p in contents[i]["parts"] if "functionCall" in p or "function_call" in p]
    fc = _get(part, "functionCall", "function_call")
    # The thought signature Gemini sent with the call comes back with it.
    (sent,) = [
        p["thoughtSignature"]
        for p in first_reply["candidates"][0]["content"]["parts"]
        if "functionCall" in p
    ]
    assert _b64(_get(part, "thoughtSignature", "thought_signature")) == _b64(sent)
    answer = contents[i + 1]
    assert answer["role"] == "user" and i + 2 == len(contents)
    result, *rest = answer["parts"]
    fr = _get(result, "functionResponse", "function_response")
    response = fr["response"]
    error = "error" in response
    return {
        "call": (fc.get("id"), fc["name"], fc["args"]),
        "result": (fr.get("id"), fr["name"], response["error" if error else "output"], error),
        "after": [p["text"] for p in rest if "text" in p],
    }


def _opening(provider: str, body: dict[str, Any]) -> str:
    """The text of the conversation's first turn."""
    if provider == "anthropic":
        (block,) = body["messages"][0]["content"]
        return block["text"]
    if provider == "openai":
        first = next(m for m in body["messages"] if m["role"] != "system")
        assert first["role"] == "user"
        return first["content"]
    first = body["contents"][0]
    assert first["role"] == "user"
    return "".join(p["text"] for p in first["parts"])


def _b64(text: str) -> bytes:
    # google-genai writes bytes URL-safe; the API accepts either alphabet.
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


# --- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", list(MODELS))
def test_tool_result_goes_back_and_the_revision_lands(fake: FakeLLMServer, provider: str):
    store = ArtifactStore()
    fake.push(
        provider,
        Tools([("read_reward", {"iteration": 1})], text="Let me read iteration 1's reward."),
        Tools([("submit_revision", _submit())], input_tokens=900, output_tokens=400),
    )
    req, later, call, outcome = _first_round(store, provider, iteration=1)
    assert not outcome.is_error
    tool_text = store.get_text(outcome.key)
    assert REWARD_1 in tool_text

    done = _revise(later)

    first_req, second_req = fake.requests_for(provider)
    # Call 1 offered the four lookup tools and the submit tool, with the evidence up front.
    assert _tool_names(provider, first_req.body) == [*REVISER_TOOLS, "submit_revision"]
    opening = first_req.prompt().user
    assert REWARD_2 in opening and "iteration 3" in opening
    assert "Iteration 1 scored best so far" in opening
    # Call 2 replays the model's call and answers it with what the tool wrote, paired by id.
    sent = _answered_call(provider, second_req, fake.responses[0][2])
    call_id, name, arguments = sent["call"]
    assert (name, arguments) == ("read_reward", {"iteration": 1})
    result_id, result_name, text, is_error = sent["result"]
    assert (result_name, text, is_error) == ("read_reward", tool_text, False)
    if provider == "gemini":  # Gemini pairs by name (the fake sends no call ids)
        assert call_id is None and result_id is None
    else:
        assert call_id == result_id == call.id
    assert _tool_names(provider, second_req.body) == [*REVISER_TOOLS, "submit_revision"]
    # The conversation still starts with the opening, word for word.
    assert _opening(provider, second_req.body) == _opening(provider, first_req.body) == opening

    assert done.done and not done.tool_calls
    assert done.base_iteration == 1 and done.config == "entropy"
    assert done.timesteps == 80_000
    assert done.reward is not None
    assert done.reward.key == iteration_prefix(req.session_id, 3) + "reward_fn.py"
    assert store.get_text(done.reward.key) == REVISED
    assert done.reward.terms == ["forward", "ctrl"]
    assert "0.1 -> 0.05" in done.changes
    assert done.usage is not None and done.usage.output_tokens == 400


def test_base_iteration_outside_the_history_falls_back_to_the_last(fake: FakeLLMServer):
    store = ArtifactStore()
    fake.push(
        "anthropic",
        Tools([("read_reward", {"iteration": 1})]),
        Tools([("submit_revision", _submit(base_iteration=7, config="turbo"))]),
    )
    req, later, _, _ = _first_round(store, "anthropic", iteration=1)
    done = _revise(later)
    assert done.done and done.base_iteration == 2  # iterations 1 and 2 only: the last
    assert done.config is None  # not a config the session has
    assert done.reward is not None and store.get_text(done.reward.key) == REVISED


@pytest.mark.parametrize("provider", list(MODELS))
def test_final_call_offers_only_the_submit_tool(fake: FakeLLMServer, provider: str):
    store = ArtifactStore()
    fake.push(
        provider,
        Tools([("read_reward", {"iteration": 1})]),
        Tools([("submit_revision", _submit())]),
    )
    _, later, _, outcome = _first_round(store, provider, iteration=1)
    done = _revise(later.model_copy(update={"final": True}))
    _, second_req = fake.requests_for(provider)
    assert _tool_names(provider, second_req.body) == ["submit_revision"]
    sent = _answered_call(provider, second_req, fake.responses[0][2])
    assert sent["result"][2] == store.get_text(outcome.key)
    assert any("submit your answer now" in t for t in sent["after"])
    assert done.done and done.base_iteration == 1


@pytest.mark.parametrize("provider", list(MODELS))
def test_a_tool_error_goes_back_as_an_error(fake: FakeLLMServer, provider: str):
    store = ArtifactStore()
    fake.push(
        provider,
        Tools([("read_reward", {"iteration": 9})]),
        Tools([("submit_revision", _submit())]),
    )
    _, later, _, outcome = _first_round(store, provider, iteration=9)
    assert outcome.is_error
    _revise(later)
    _, second_req = fake.requests_for(provider)
    _, name, text, is_error = _answered_call(provider, second_req, fake.responses[0][2])["result"]
    assert name == "read_reward" and is_error
    assert "iteration must be one of [1, 2] (got 9)" in text


def _all_results(provider: str, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """Every tool result in a request, in order: (tool name, text, is_error)."""
    if provider == "anthropic":
        names = {
            b["id"]: b["name"]
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b["type"] == "tool_use"
        }
        return [
            (names[b["tool_use_id"]], b["content"], b["is_error"])
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b["type"] == "tool_result"
        ]
    if provider == "openai":
        names = {
            tc["id"]: tc["function"]["name"]
            for m in body["messages"]
            for tc in m.get("tool_calls") or []
        }
        # Chat Completions has no error flag: the content says "error" first, once.
        return [
            (
                names[m["tool_call_id"]],
                m["content"],
                m["content"].lower().startswith("error") and "Error: error" not in m["content"],
            )
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    out = []
    for c in body["contents"]:
        for p in c["parts"]:
            fr = p.get("functionResponse") or p.get("function_response")
            if fr:
                error = "error" in fr["response"]
                out.append((fr["name"], fr["response"]["error" if error else "output"], error))
    return out


@pytest.mark.parametrize("provider", list(MODELS))
def test_earlier_rounds_stay_in_the_conversation(fake: FakeLLMServer, provider: str):
    """Round 0's answer (an error) is still there, still an error, when round 1's comes back."""
    store = ArtifactStore()
    fake.push(
        provider,
        Tools([("read_reward", {"iteration": 9})]),
        Tools([("read_reward", {"iteration": 1})]),
        Tools([("submit_revision", _submit())]),
    )
    req, later, _, wrong = _first_round(store, provider, iteration=9)
    second = _revise(later)
    assert not second.done
    folder = iteration_prefix(req.session_id, 3) + "revision_c0/"
    assert second.transcript_key == folder + "turn_1.json"
    (call,) = second.tool_calls
    right = ActivityEnvironment().run(
        session_tool,
        ToolRequest(
            session_id=req.session_id,
            env_id=ENV_ID,
            call=call,
            result_key=folder + "tool_1_0.txt",
            history_key=second.history_key,
        ),
    )
    done = _revise(
        later.model_copy(
            update={"round": 2, "transcript_key": second.transcript_key, "tool_outcomes": [right]}
        )
    )
    assert done.done and done.base_iteration == 1
    third = fake.requests_for(provider)[2]
    assert _all_results(provider, third.body) == [
        ("read_reward", store.get_text(wrong.key), True),
        ("read_reward", store.get_text(right.key), False),
    ]


def test_the_opening_shows_training_over_time_at_the_judged_checkpoints(fake: FakeLLMServer):
    store = ArtifactStore()
    req = _request(store, "anthropic")
    # The run's metrics (one line per update) and the judge's checkpoints with what it measured.
    rows = [
        {
            "timesteps": 2048 * i,
            "ep_return_mean": 10.0 * i,
            "ep_len_mean": 1000.0,
            "term_forward": 0.02 * i,
            "term_ctrl": -0.05,
        }
        for i in range(1, 25)
    ]
    store.put_text(
        req.train.run_prefix + "metrics/scalars.jsonl", "\n".join(json.dumps(r) for r in rows)
    )
    judgment = req.judgment.model_copy(
        update={
            "checkpoints": {"25": 0.1, "50": 0.2, "100": 0.3},
            "checkpoint_measured": {
                "25": {"forward_speed": 0.31},
                "50": {"forward_speed": 0.62},
                "100": {"forward_speed": 0.9},
            },
        }
    )
    criteria = [
        c.model_copy(update={"unit": "m/s"}) if c.name == "forward_speed" else c
        for c in req.criteria
    ]
    req = req.model_copy(update={"judgment": judgment, "criteria": criteria})
    fake.push("anthropic", Tools([("submit_revision", _submit())]))
    _revise(req)
    opening = fake.requests_for("anthropic")[0].prompt().user
    table = opening[opening.index("# Training over time") :].splitlines()
    assert (
        "| % of budget | steps | return | episode length | term_ctrl | term_forward |" in (table[2])
        and "forward_speed measured (m/s)" in table[2]
    )
    # 25% of 50,176 steps is nearest the update at 12,288: its return, terms, score, measured.
    assert table[4].startswith("| 25% | 12,288 | 60 | 1000 | -0.05 | 0.12 | 0.1 | 0.31 |")
    assert table[6].startswith("| 100% | 49,152 | 240 |")
    assert "How to read it:" in opening


def test_the_opening_and_read_judgment_show_the_same_evidence_with_the_video_judge_on(
    fake: FakeLLMServer,
):
    """The code judge passed iteration 2 (judgment.json: 1.00, passed); the video judge said a
    visual criterion is not met and the synthesizer trusted the video (0.50, not passed). The
    reviser's opening and its read_judgment tool print that iteration from one source: the
    same verdict, score, criteria (verdicts labelled verdicts) and checkpoint measurements."""
    from workflows.contracts.judging import VisualJudgment, VisualVerdict
    from workflows.contracts.keys import JUDGMENT
    from workflows.contracts.llm import SynthesisResult
    from workflows.synthesis import synthesize

    store = ArtifactStore()
    req = _request(store, "anthropic")
    met = [c.model_copy(update={"value": 3.2, "score": 1.0, "met": True}) for c in
           _judgment(3.2, 1.0).criteria]  # fmt: skip
    code = Judgment(
        score=1.0, passed=True, diagnosis="every criterion met", criteria=met,
        checkpoints={"50": 0.8, "100": 1.0},
        checkpoint_measured={"50": {"forward_speed": 2.5, "calm_actions": 0.3},
                             "100": {"forward_speed": 3.2, "calm_actions": 0.2}},
    )  # fmt: skip
    seen = VisualJudgment(
        score=0.0, shown="16 frames",
        verdicts=[VisualVerdict(name="moves_forward", verdict="not_met", score=0.0,
                                reason="it rocks in place")],
    )  # fmt: skip
    settled = SynthesisResult(score=0.5, trusted="video", diagnosis="the floor does not move")
    merged = synthesize(code, seen, 0.9, settled, witness=True)
    assert merged.score == 0.5 and not merged.passed
    last = req.history[-1].model_copy(
        update={"score": merged.score, "passed": merged.passed, "diagnosis": merged.diagnosis,
                "failure_tags": merged.failure_tags, "criteria": merged.criteria}
    )  # fmt: skip
    req = req.model_copy(update={"judgment": merged, "history": [req.history[0], last]})
    store.put_text(last.best_run.run_prefix + JUDGMENT, code.model_dump_json())
    rows = [
        {"timesteps": 2048 * i, "ep_return_mean": 10.0 * i, "ep_len_mean": 1000.0,
         "term_forward": 0.02 * i, "term_ctrl": -0.05}
        for i in range(1, 25)
    ]  # fmt: skip
    store.put_text(
        last.best_run.run_prefix + "metrics/scalars.jsonl", "\n".join(json.dumps(r) for r in rows)
    )
    fake.push("anthropic", Tools([("read_judgment", {"iteration": 2})]))
    first = _revise(req)
    (call,) = first.tool_calls
    outcome = ActivityEnvironment().run(
        session_tool,
        ToolRequest(session_id=req.session_id, env_id=ENV_ID, call=call,
                    result_key="tools/read_judgment.txt", history_key=first.history_key),
    )  # fmt: skip
    answer = store.get_text(outcome.key)
    opening = fake.requests_for("anthropic")[0].prompt().user
    assert answer.startswith("# Iteration 2: not passed") and "(score 0.50)" in answer
    assert "- visual:moves_forward: the video judge says not met: it rocks in place" in answer
    assert "| 50% |" in answer and "| 3.2 | 0.2 |" in answer  # the measured values, not "-"
    assert answer in opening  # the same evidence, word for word
