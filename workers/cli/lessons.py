"""`policyforge lessons`: list, show, edit and delete the lesson pages sessions leave in S3
(activities/lessons.py). An edit goes through $EDITOR and is refused, in one line, when its
`policyforge-lesson` block no longer reads, so a typo never breaks what later sessions read."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from workflows.contracts.keys import lesson_key
from workflows.contracts.shown import shown

if TYPE_CHECKING:
    from activities.artifacts import ArtifactStore


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `lessons` command and its actions."""
    p = sub.add_parser("lessons", help="what earlier sessions learnt, per env and behaviour")
    p.add_argument("action", choices=["list", "show", "edit", "delete"], nargs="?", default="list")
    p.add_argument("env_id", nargs="?", help="the env (show, edit, delete; a filter for list)")
    p.add_argument("behaviour", nargs="?", help="the behaviour key, or the intent in quotes")


def _key(args: argparse.Namespace) -> tuple[str, str]:
    from activities import lessons

    if not args.env_id or not args.behaviour:
        raise SystemExit(
            f"error: lessons {args.action} needs ENV and BEHAVIOUR (see `policyforge lessons`)"
        )
    behaviour = lessons.behaviour_key(args.behaviour)
    return args.env_id, behaviour


def cmd_lessons(args: argparse.Namespace, store: ArtifactStore | None = None) -> None:
    """Run one `lessons` action, printing what it did; S3 that cannot be reached or refuses
    is one line naming the endpoint and what to set."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        _run(args, store)
    except (BotoCoreError, ClientError) as exc:
        from activities.artifacts import endpoint_url

        raise SystemExit(
            f"error: lessons are in S3 at {endpoint_url() or 'AWS'}, which answered: "
            f"{str(exc).splitlines()[0]}; set AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY as the workers have them (policyforge dev's embedded "
            "SeaweedFS takes any key, e.g. policyforge/policyforge)"
        ) from None


def _run(args: argparse.Namespace, store: ArtifactStore | None) -> None:
    # Imported here: `policyforge --help` stays fast without boto3.
    from activities import lessons
    from activities.artifacts import ArtifactStore

    store = store or ArtifactStore()
    if args.action == "list":
        found = [(e, b) for e, b in lessons.list_lessons(store) if args.env_id in (None, e)]
        if not found:
            print("no lessons yet: they are written when sessions finish")
        for env_id, behaviour in found:
            # Both names come from S3 keys, which anyone who can write the bucket chooses.
            env, name = shown(env_id, 60), shown(behaviour, 80)
            try:
                text = store.get_text(lesson_key(env_id, behaviour))
                lesson = lessons.parse(env_id, behaviour, text)
            except Exception as exc:  # a planted or broken page: say so, list the rest
                print(f"{env:26} {name:40} does not read: {shown(exc, 120)}")
                continue
            passed = sum(e.passed for e in lesson.entries)
            print(f"{env:26} {name:40} {len(lesson.entries)} sessions, {passed} passed")
        return
    env_id, behaviour = _key(args)
    key = lesson_key(env_id, behaviour)
    if not store.exists(key):
        raise SystemExit(f"error: no lesson {env_id} {behaviour} (see `policyforge lessons`)")
    if args.action == "show":
        # Diagnoses and notes in it came from a model: its lines are kept, each one shown.
        print("\n".join(shown(line) for line in store.get_text(key).split("\n")), end="")
    elif args.action == "delete":
        store.delete(key)
        print(f"deleted s3://{store.bucket}/{key}")
    else:
        _edit(store, env_id, behaviour, key)


def _edit(store: ArtifactStore, env_id: str, behaviour: str, key: str) -> None:
    from activities import lessons

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{behaviour}.md"
        path.write_text(store.get_text(key))
        subprocess.run([*shlex.split(editor), str(path)], check=True)
        text = path.read_text()
    try:
        lessons.parse(env_id, behaviour, text)
    except lessons.LessonFormatError as exc:
        raise SystemExit(f"error: {exc}; the lesson was not changed") from None
    store.put_text(key, text)
    print(f"saved s3://{store.bucket}/{key}")
