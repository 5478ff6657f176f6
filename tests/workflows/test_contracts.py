"""The shared contracts: light enough for the workflow sandbox, the LLM requests' shared
context, and the S3 key layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workflows.contracts import keys, llm
from workflows.contracts.context import Contract, PromptContext, SessionContext, UserInput

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "torch", "gymnasium", "boto3", "botocore", "mujoco", "activities")


def test_workflow_code_imports_nothing_heavy():
    code = (
        "import sys, pkgutil, importlib, workflows.contracts as c, workflows.session\n"
        "for m in pkgutil.iter_modules(c.__path__):\n"
        "    importlib.import_module(f'workflows.contracts.{m.name}')\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_llm_requests_share_one_context():
    requests = {
        name: cls
        for name, cls in vars(llm).items()
        if isinstance(cls, type) and name.endswith("Request") and cls.__module__ == llm.__name__
    }
    assert len(requests) == 9
    assert all(issubclass(cls, PromptContext) for cls in requests.values())
    # Only the two video requests go without the env.
    without_env = {n for n, cls in requests.items() if not issubclass(cls, SessionContext)}
    assert without_env == {"VisualCriteriaRequest", "VlmJudgeRequest"}
    for cls in requests.values():
        for field in ("session_id", "prompt", "llm_model"):
            assert cls.model_fields[field].is_required()


def test_key_layout():
    prefix = keys.run_prefix("s1", 2, keys.run_name(1, "lr_half", 0))
    assert prefix == "sessions/s1/iter_2/c1_lr_half_seed_0/"
    assert keys.run_prefix_of(prefix + keys.TRAJECTORY) == prefix
    assert keys.run_prefix_of("elsewhere/eval.npz") is None
    assert keys.reward_key("s1", 2) == "sessions/s1/iter_2/reward_fn.py"
    assert keys.reward_key("s1", 2, 1, "fix2") == "sessions/s1/iter_2/reward_fn_c1.fix2.py"
    assert keys.judge_key("s1", "reviewed") == "sessions/s1/judge_fn.reviewed.py"
    folder = keys.revision_folder("s1", 2, 0)
    assert folder == "sessions/s1/iter_2/revision_c0/"
    assert keys.folder_of(keys.turn_key(folder, 3)) == folder
    assert keys.tool_result_key(folder, 1, 2) == folder + "tool_1_2.txt"
    assert keys.checkpoint_key(prefix, 5000) == prefix + "checkpoints/step_5000/"


def _contract_classes() -> list[type]:
    import importlib
    import pkgutil

    import workflows.contracts as package

    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"workflows.contracts.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Contract)
                and value.__module__ == module.__name__
            ):
                found[value.__qualname__] = value
    return list(found.values())


def test_payloads_from_a_newer_release_decode_here():
    """A field a later release adds must not break this release's workers on a payload it
    wrote (a session in flight during a deploy); what a person types stays strict."""
    from workflows.contracts.training import ValidateResult

    payload = ValidateResult(ok=False, error="boom").model_dump(mode="json")
    decoded = ValidateResult.model_validate_json(json.dumps({**payload, "added_later": 1}))
    assert decoded == ValidateResult(ok=False, error="boom")
    lenient = [c for c in _contract_classes() if not issubclass(c, UserInput)]
    assert len(lenient) > 40
    assert all(c.model_config.get("extra") == "ignore" for c in lenient)


def test_what_a_person_types_rejects_unknown_fields_naming_them():
    from pydantic import ValidationError

    from workflows.contracts.session import SessionInput, input_errors
    from workflows.contracts.steering import ApprovalDecision

    strict = {c.__name__ for c in _contract_classes() if issubclass(c, UserInput)}
    assert strict == {
        "UserInput",
        "SessionInput",
        "ApprovalDecision",
        "BenchmarkInput",
        "BenchmarkCase",
    }
    base = {"prompt": "run forward", "env_id": "HalfCheetah-v5"}
    assert input_errors({**base, "timestep": 5}) == [
        "timestep: unknown field; remove it (see SessionInput, workflows/contracts/session.py)"
    ]
    assert SessionInput.model_validate(base).prompt == "run forward"
    try:
        ApprovalDecision.model_validate({"approve": True, "nite": "x"})
    except ValidationError as exc:
        assert exc.errors()[0]["loc"] == ("nite",)
    else:
        raise AssertionError("an unknown approval field was accepted")
