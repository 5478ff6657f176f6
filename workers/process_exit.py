"""Ending a process that used a Temporal client, without tripping over interpreter teardown."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable


def exit_hard(code: int | str | None) -> None:
    """Flush and leave with `code`, skipping interpreter finalization.

    Temporal's Rust client threads may call into Python while the interpreter finalizes, which
    aborts a finished command with SIGABRT (temporalio/sdk-python#300). Everything worth
    closing is closed by then: services and workers stop in their context managers.
    """
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code or 0)


def run_and_exit(body: Callable[[], None]) -> None:
    """Run a command's body; its SystemExit (or normal return) becomes the exit status."""
    try:
        body()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    exit_hard(code)
