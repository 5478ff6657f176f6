"""`policyforge lessons` against the real S3 server: list, show, edit through $EDITOR (a broken
edit is refused and changes nothing), delete."""

from __future__ import annotations

import argparse
import stat
from pathlib import Path

import pytest

from activities import lessons
from activities.artifacts import ArtifactStore
from workers.cli.lessons import cmd_lessons
from workflows.contracts.keys import lesson_key
from workflows.contracts.lessons import LessonRequest


def _args(action: str, env_id: str | None = None, behaviour: str | None = None):
    return argparse.Namespace(action=action, env_id=env_id, behaviour=behaviour)


def _request(session_id: str, prompt: str, env_id: str) -> LessonRequest:
    """A finished, not passed session's lesson request."""
    return LessonRequest(
        session_id=session_id,
        prompt=prompt,
        env_id=env_id,
        llm_model="offline",
        status="not_passed",
        total_timesteps=1000,
    )


def _empty_store() -> ArtifactStore:
    store = ArtifactStore()
    store.ensure_bucket()
    for key in store.list_keys("lessons/"):
        store.delete(key)
    return store


def _editor(tmp_path: Path, sed: str) -> str:
    script = tmp_path / "editor.sh"
    script.write_text(f"#!/bin/sh\nsed -i '{sed}' \"$1\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_list_show_edit_delete(s3, tmp_path, monkeypatch, capsys):
    store = _empty_store()
    cmd_lessons(_args("list"), store)
    assert "no lessons yet" in capsys.readouterr().out

    req = _request("s-1", "swim forward", "Swimmer-v5")
    key = lessons.record(store, req)
    assert key == lesson_key("Swimmer-v5", "swim-forward")
    cmd_lessons(_args("list"), store)
    assert "Swimmer-v5" in capsys.readouterr().out
    cmd_lessons(_args("show", "Swimmer-v5", "Swim forward!"), store)  # the intent works too
    assert "# Lesson: swim-forward on Swimmer-v5" in capsys.readouterr().out

    monkeypatch.setenv("EDITOR", _editor(tmp_path, "s/(none yet: add yours here)/Go slower./"))
    cmd_lessons(_args("edit", "Swimmer-v5", "swim-forward"), store)
    assert "Go slower." in store.get_text(key)

    before = store.get_text(key)
    monkeypatch.setenv("EDITOR", _editor(tmp_path, 's/"session_id"/"session_id/'))
    with pytest.raises(SystemExit, match="does not read.*the lesson was not changed"):
        cmd_lessons(_args("edit", "Swimmer-v5", "swim-forward"), store)
    assert store.get_text(key) == before

    cmd_lessons(_args("delete", "Swimmer-v5", "swim-forward"), store)
    assert not store.exists(key)
    with pytest.raises(SystemExit, match="no lesson Swimmer-v5 swim-forward"):
        cmd_lessons(_args("show", "Swimmer-v5", "swim-forward"), store)
    with pytest.raises(SystemExit, match="needs ENV and BEHAVIOUR"):
        cmd_lessons(_args("show", "Swimmer-v5"), store)


def test_s3_that_cannot_be_reached_is_one_line(monkeypatch):
    from workers.dev.services import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    store = ArtifactStore(endpoint=endpoint, attempts=1)
    with pytest.raises(SystemExit) as info:
        cmd_lessons(_args("list"), store)
    message = str(info.value)
    assert message.startswith(f"error: lessons are in S3 at {endpoint}, which answered: ")
    assert "\n" not in message and "AWS_ACCESS_KEY_ID" in message


def test_list_shows_planted_key_names_as_text_and_lists_the_rest(s3, capsys):
    """A key anyone who can write the bucket planted: its escape sequences and look-alike
    characters are shown as escapes, its page that does not read is said so, and the real
    lessons are still listed (issue 42)."""
    store = _empty_store()
    store.put_text("lessons/\x1b[2J\x1b]0;pwned\x07Ant-v5/walk\ufe0f.md", "# not a lesson")
    broken = _request("s-1", "swim forward", "Swimmer-v5")
    key = lessons.record(store, broken)
    store.put_text(key, store.get_text(key).replace('"session_id"', '"session_id'))
    req = _request("s-2", "hop forward", "Hopper-v5")
    lessons.record(store, req)
    cmd_lessons(_args("list"), store)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\ufe0f" not in out
    assert "\\x1b[2J\\x1b]0;pwned\\x07Ant-v5" in out and "walk\\ufe0f" in out
    assert "does not read" in out
    assert "Hopper-v5" in out and "1 sessions, 0 passed" in out
