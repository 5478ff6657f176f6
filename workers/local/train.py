"""Training without Temporal or S3, for the `policyforge train` CLI: the same child, local files."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.training import job
from activities.training.cores import cores
from activities.training.reward_runtime import RewardLoadError, parse_check

OnProgress = Callable[[int, float | None], None]


def check_reward_file(path: Path) -> None:
    """Raise RewardLoadError when the file does not parse.

    The message is one line: "reward.py does not parse: line 3: invalid syntax".

    Only a static check: the code itself runs in the child, never in this process.
    """
    try:
        source = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise RewardLoadError(f"{Path(path).name} cannot be read: {exc}") from None
    parse_check(source, Path(path).name)


def train_local(
    reward_path: Path,
    env_id: str,
    timesteps: int,
    seed: int,
    out_dir: Path,
    on_progress: OnProgress | None = None,
    *,
    max_eval_steps: int | None = None,
    record_video: bool = True,
    ppo: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train, then evaluate one deterministic episode, all into out_dir; return the summary.

    The summary is summary.json's content plus "evaluation" (episode return, length, ...).
    Raises RewardLoadError when the reward code is at fault, ChildFailed otherwise.
    """
    check_reward_file(reward_path)
    out_dir = Path(out_dir).resolve()
    common: dict[str, Any] = {
        "env_id": env_id,
        "reward_path": str(Path(reward_path).resolve()),
        "reward_filename": Path(reward_path).name,
        "seed": seed,
    }
    # Every core, as a session's run alone on a train worker gets (POLICYFORGE_TRAIN_CORES caps).
    train_req = ChildRequest(**common, timesteps=timesteps, ppo=ppo or {}, threads=cores())
    eval_req = ChildRequest(**common, max_steps=max_eval_steps, record_video=record_video)

    def on_event(event: dict[str, Any]) -> None:
        if on_progress is not None and event.get("event") == "progress":
            on_progress(int(event["timesteps"]), event.get("mean_return"))

    async def go() -> dict[str, Any]:
        await run_child(job.TRAIN, train_req, out_dir, on_event, stall_s=600)
        return await run_child(job.EVALUATE, eval_req, out_dir, timeout_s=1800)

    try:
        evaluation = _run_sync(go)
    except ChildFailed as exc:
        if exc.reward_fault:
            raise RewardLoadError(exc.message) from None
        raise
    finally:
        for name in ("request_train.json", "request_evaluate.json", "result.json"):
            (out_dir / name).unlink(missing_ok=True)
    summary = json.loads((out_dir / "summary.json").read_text())
    evaluation = {k: v for k, v in evaluation.items() if k not in ("ok", "mode")}
    (out_dir / "evaluation.json").write_text(json.dumps(evaluation, indent=2) + "\n")
    return {**summary, "evaluation": evaluation}


def _run_sync(factory: Callable[[], Any]) -> Any:
    """asyncio.run, also when called from inside a running event loop (then on a thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()
