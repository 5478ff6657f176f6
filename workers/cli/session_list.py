"""`policyforge sessions`: the latest sessions, from the search attributes the dashboard's list
reads (workers/dashboard/sessions.py: the same visibility query and rows), with each one's
links to the dashboard and the Temporal Web UI.

The table fits the terminal's width (COLUMNS, else the terminal's size; 80 when output is not a
terminal): each session id is whole, on its row's line, never cut or folded (it is what a person
copies into `policyforge status ID`); the prompt is shortened with an ellipsis, and where that is
not enough the columns after the id are left out (the env first, the stage last: DROPPED_FIRST).
Links are whole URLs: one line per session with its id where that fits, else each link on a line
of its own (a URL wider than the terminal is still never cut).

Nothing here imports the Temporal client or rich until the command runs: `add_parser` is part
of building the CLI's parser, which `policyforge --help` does.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, get_args

from workflows.contracts.session import ENV_IDS, Stage

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

# The columns, in the order shown; the session id is first, whole.
COLUMNS = ("session", "stage", "iter", "passed", "env", "prompt")
# While the table is wider than the terminal: the prompt is shortened (down to PROMPT_MIN
# characters), and where that is not enough these columns are left out, in this order, the
# prompt taking the room each one leaves. The session id is never shortened nor left out.
DROPPED_FIRST = ("env", "iter", "prompt", "passed", "stage")
PROMPT_MIN = 12
PROMPT_MAX = 60
ELLIPSIS = "..."  # as `shown` cuts text
GAP = "  "


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
    from workers.settings import Settings

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

    from workflows.contracts.shown import shown

    try:
        rows = asyncio.run(latest_sessions(args.env_id, args.stage, args.limit))
    except RPCError as exc:
        # e.g. a namespace without the search attributes (README: Steering a session).
        raise SystemExit(f"error: sessions: {shown(' '.join(exc.message.split()), 300)}") from None
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    from rich.console import Console

    print_sessions(Console(soft_wrap=True), rows, filtered=bool(args.env_id or args.stage))


def print_sessions(console: Console, rows: list[dict[str, Any]], *, filtered: bool = False) -> None:
    """The table of `rows` (`latest_sessions`'), then their links, in `console.width` columns
    (see the module docstring)."""
    from workers.cli.render import say

    if not rows:
        say(console, "no sessions" + (" match" if filtered else " yet"))
        return
    cells = [_cells(row) for row in rows]
    natural = {name: max(len(name), *(c[name].cell_len for c in cells)) for name in COLUMNS}
    natural["prompt"] = min(natural["prompt"], PROMPT_MAX)
    widths = fitted_widths(natural, console.width)
    say(console, _line({name: _header(name) for name in COLUMNS}, widths))
    for row_cells in cells:
        say(console, _line(row_cells, widths))
    for line in link_lines(rows, console.width):
        say(console, line)


def fitted_widths(natural: dict[str, int], width: int) -> dict[str, int]:
    """Each shown column's width: all at their natural width where the table fits `width`;
    else the prompt shortened, then columns left out (DROPPED_FIRST), until it fits or only the
    session id is left (it is never shortened)."""
    widths = dict(natural)

    def total() -> int:
        return sum(widths.values()) + len(GAP) * (len(widths) - 1)

    for name in (None, *DROPPED_FIRST):
        if name is not None:
            widths.pop(name, None)
        if total() <= width:
            break
        if "prompt" in widths:
            room = width - (total() - widths["prompt"])
            if room >= PROMPT_MIN:
                widths["prompt"] = room
                break
    return widths


def link_lines(rows: list[dict[str, Any]], width: int) -> list[str]:
    """Each session's dashboard and Web UI links: "ID  DASHBOARD  WEB-UI" per session where every
    such line fits `width`, else each link whole on a line of its own (never a URL cut)."""
    from rich.cells import cell_len

    from workflows.contracts.shown import shown

    wide = [shown(f"{r['session_id']}  {r['dashboard_url']}  {r['ui_url']}") for r in rows]
    if all(cell_len(line) <= width for line in wide):
        return wide
    return [shown(url) for r in rows for url in (r["dashboard_url"], r["ui_url"])]


def _cells(row: dict[str, Any]) -> dict[str, Text]:
    from rich.text import Text

    from workers.cli.render import literal

    best = row["best_score"]
    return {
        "session": literal(row["session_id"]),
        "stage": literal(_stage(row)),
        "iter": Text("-" if row["iteration"] is None else str(row["iteration"])),
        # The verdict first: a best score alone reads like a pass when it is high.
        "passed": Text(
            "-" if best is None else ("yes" if row["passed"] else "no") + f" {best:.2f}"
        ),
        "env": literal(row["env_id"] or "-"),
        "prompt": literal(row["prompt"] or ""),
    }


def _header(name: str) -> Text:
    from rich.text import Text

    return Text(name, style="bold")


def _line(cells: dict[str, Text], widths: dict[str, int]) -> Text:
    """One line of the table: each shown column's cell at its width (the last one not padded),
    cut with "..." where it is wider (only the prompt ever is: the id never)."""
    from rich.text import Text

    names = [name for name in COLUMNS if name in widths]
    parts: list[Text] = []
    for i, name in enumerate(names):
        cell = cells[name].copy()
        last = i == len(names) - 1
        if cell.cell_len > widths[name] and name != "session":
            cell.truncate(widths[name] - len(ELLIPSIS))
            cell.append(ELLIPSIS)
        if not last:
            cell.pad_right(widths[name] - cell.cell_len)
        parts.append(cell)
        if not last:
            parts.append(Text(GAP))
    line = Text.assemble(*parts)
    line.rstrip()
    return line


def _stage(row: dict[str, Any]) -> str:
    """The session's stage, and its workflow's state when that is not running or completed
    (a failed or terminated session keeps the stage it was in)."""
    stage = row["stage"] or "-"
    state = row["workflow_status"]
    return stage if state in ("Running", "Completed") else f"{stage} ({state.lower()})"
