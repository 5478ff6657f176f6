"""One-line error messages that blame generated code where it failed, for the sandbox process
(which reports them) and the runner (which reports what the sandbox or its own checks raised)."""

from __future__ import annotations

import traceback


def one_line(text: str, limit: int = 500) -> str:
    """The text on one line (whitespace collapsed), cut to `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def code_error(exc: BaseException, filenames: tuple[str, ...]) -> str | None:
    """'reward_fn.py line 12: ZeroDivisionError: ...' when generated code failed, else None."""
    # Imported here: these modules pull in numpy, and the messages above need none of it.
    from activities.sandbox.judge_code import JudgeLoadError
    from activities.sandbox.reward_code import RewardLoadError

    if isinstance(exc, RewardLoadError | JudgeLoadError):
        return one_line(str(exc))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in filenames]
    if not frames:
        return None
    where = f"{frames[-1].filename} line {frames[-1].lineno}"
    return one_line(f"{where}: {type(exc).__name__}: {exc}")
