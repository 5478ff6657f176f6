"""`policyforge sessions`: the latest sessions, from the search attributes the dashboard's list
reads (workers/dashboard/sessions.py: the same visibility query and rows), with each one's
links to the dashboard and the Temporal Web UI."""

from __future__ import annotations

import argparse
import json
from typing import Any, get_args

from rich.console import Console
from rich.table import Table

from workers.render import literal, say
from workers.settings import Settings
from workflows.contracts.session import ENV_IDS, Stage
from workflows.contracts.shown import shown


def add_parser(sub: Any) -> None:
    """`policyforge sessions`'s arguments."""
    p = sub.add_parser("sessions", help="the latest sessions: stage, iteration, best score, links")
    p.add_argument("--env", dest="env_id", choices=ENV_IDS, default=None, metavar="ENV")
    p.add_argument("--stage", choices=get_args(Stage), default=None)
    p.add_argument("--limit", type=int, default=20, help="at most this many (20)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


async def latest_sessions(
    env_id: str | None = None, stage: str | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """The newest sessions first (at most `limit`), each the dashboard list's row with its
    `dashboard_url` and `ui_url`."""
    from workers.client import connect
    from workers.dashboard.sessions import PromptCache, list_sessions

    settings = Settings()
    client = await connect(settings)
    filters = {"env": env_id or "", "stage": stage or ""}
    rows = await list_sessions(client, filters, PromptCache(), limit=limit)
    return [
        {
            **row.as_json(),
            "dashboard_url": settings.dashboard_link(row.session_id),
            "ui_url": settings.ui_link(row.session_id, client.namespace),
        }
        for row in rows[:limit]
    ]


def cmd_sessions(args: argparse.Namespace) -> None:
    """`policyforge sessions`: a table for people, or JSON for scripts."""
    import asyncio

    if args.limit < 1:
        raise SystemExit(f"error: --limit: must be at least 1 (got {args.limit})")
    from temporalio.service import RPCError

    try:
        rows = asyncio.run(latest_sessions(args.env_id, args.stage, args.limit))
    except RPCError as exc:
        # e.g. a namespace without the search attributes (README: Steering a session).
        raise SystemExit(f"error: sessions: {shown(' '.join(exc.message.split()), 300)}") from None
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    console = Console(soft_wrap=True)
    if not rows:
        say(console, "no sessions" + (" match" if args.env_id or args.stage else " yet"))
        return
    table = Table(show_lines=False, box=None, pad_edge=False)
    for col in ("session", "stage", "iter", "passed", "env", "prompt"):
        table.add_column(col, overflow="fold")
    for row in rows:
        best = row["best_score"]
        table.add_row(
            literal(row["session_id"]),
            literal(_stage(row)),
            "-" if row["iteration"] is None else str(row["iteration"]),
            # The verdict first: a best score alone reads like a pass when it is high.
            "-" if best is None else ("yes" if row["passed"] else "no") + f" {best:.2f}",
            literal(row["env_id"] or "-"),
            literal(row["prompt"] or "", 60),
        )
    console.print(table)
    for row in rows:
        links = f"{row['session_id']}  {row['dashboard_url']}  {row['ui_url']}"
        say(console, shown(links))


def _stage(row: dict[str, Any]) -> str:
    """The session's stage, and its workflow's state when that is not running or completed
    (a failed or terminated session keeps the stage it was in)."""
    stage = row["stage"] or "-"
    state = row["workflow_status"]
    return stage if state in ("Running", "Completed") else f"{stage} ({state.lower()})"
