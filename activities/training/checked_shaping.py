"""A reward's SHAPING travels from its validation to every later run of the same code.

SHAPING is data the module computes when it runs, and a module may compute it differently in
another process (a clock, a random draw). Validation parses it against the env once and records
what it checked beside the code in S3 (`<reward key>.shaping.json`, with the code's hash); the
activities that run the code later send that record with it (`ChildRequest.reward_shaping`),
and the run applies the recorded value, not what the module says then. A reward with no record
(validated before this was kept, or never validated) keeps its module's own, checked when the
run starts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any

from activities.runner.protocol import BatchMember, CheckedShaping

if TYPE_CHECKING:  # the runner imports this module without an S3 client
    from activities.artifacts import ArtifactStore
    from activities.sandbox.client import SandboxClient
    from activities.sandbox.reward_client import SandboxRewards

log = logging.getLogger(__name__)

SUFFIX = ".shaping.json"
RECORD_LIMIT = 1 << 20  # a SHAPING is a few hundred bytes; a planted giant is no record


def record_key(reward_key: str) -> str:
    """Where validation records the SHAPING it checked for the code at `reward_key`."""
    return reward_key + SUFFIX


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def record_text(source: str, shaping: Any) -> str:
    """The record for `source`'s checked SHAPING (None: it has none)."""
    return json.dumps({"sha256": _digest(source), "shaping": shaping}, allow_nan=False)


def read_record(text: bytes | str, source: str) -> CheckedShaping | None:
    """The checked SHAPING in a record, when the record is for this very code; else None."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or raw.get("sha256") != _digest(source):
        return None
    return CheckedShaping(value=raw.get("shaping"))


async def save(store: ArtifactStore, reward_key: str, source: str, shaping: Any) -> None:
    """Record the SHAPING validation checked for the code at `reward_key`."""
    await asyncio.to_thread(store.put_text, record_key(reward_key), record_text(source, shaping))


async def load(store: ArtifactStore, reward_key: str, source: str) -> CheckedShaping | None:
    """The SHAPING validation checked for this code, or None when there is no record of it."""
    from botocore.exceptions import ClientError

    try:
        data = await asyncio.to_thread(
            store.get_bytes_at_most, record_key(reward_key), RECORD_LIMIT
        )
    except (ClientError, ValueError):
        return None
    return read_record(data, source)


def apply(rewards: Any, checked: CheckedShaping | None, filename: str) -> None:
    """Give a loaded reward the SHAPING its validation checked (nothing when there is none)."""
    if checked is None:
        return
    if getattr(rewards, "shaping", None) != checked.value:
        log.warning(
            "%s: the module's SHAPING differs from the one validated; the validated one applies",
            filename,
        )
    rewards.shaping = checked.value


def member_rewards(box: SandboxClient, member: BatchMember) -> SandboxRewards:
    """A batch member's reward (training's: non-finite rewards zeroed and counted), loaded in
    its sandbox, with the SHAPING its validation checked."""
    from activities.sandbox.reward_client import SandboxRewards

    rewards = SandboxRewards(box, member.reward_source, member.reward_filename, strict=False)
    apply(rewards, member.reward_shaping, member.reward_filename)
    return rewards
