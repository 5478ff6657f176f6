"""structlog JSON logging for every process (workers, CLI, dev): ours and every library's.

One handler on the root logger renders every record as one JSON line with structlog's
`ProcessorFormatter`: our structlog lines, and the standard-library loggers of the Temporal SDK
(`workflow.logger`, `activity.logger`, the worker's own lines, and the SDK core's, which the
worker runtime forwards: workers/pools/metrics.py), boto3/botocore, urllib3, httpx and the provider
SDKs, and Python warnings. A line written while an activity runs carries its `session_id`,
`activity` and `attempt` (and `iteration` where the activity bound one: activities/logs.py); a
workflow's lines carry `session_id`, `workflow_type` and `run_id`. The SDK skips workflow lines
while a worker replays history (`workflow.logger.log_during_replay` is False), so each comes out
once.
"""

from __future__ import annotations

import logging
import sys
from typing import IO, Any

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger
from temporalio import activity, workflow

# Libraries that log every request or credential lookup at info: at warning, unless debug.
CHATTY = ("botocore", "boto3", "s3transfer", "urllib3", "httpx", "httpcore", "google_genai")
# The attributes every LogRecord has; any other attribute came with the call's `extra`.
# uvicorn's `color_message` is its message again with terminal colours: not data.
_RECORD_ATTRS = set(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


def add_temporal_context(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """The session (workflow id), activity and attempt a line was written for: from the SDK
    loggers' details, else from the activity running in this thread or task."""
    details = event.pop("temporal_workflow", None)
    if isinstance(details, dict):
        event.setdefault("session_id", details.get("workflow_id"))
        for key in ("workflow_type", "run_id", "update_name"):
            if details.get(key) is not None:
                event.setdefault(key, details[key])
    details = event.pop("temporal_activity", None)
    if isinstance(details, dict):
        event.setdefault("session_id", details.get("workflow_id"))
        event.setdefault("activity", details.get("activity_type"))
        event.setdefault("attempt", details.get("attempt"))
    elif activity.in_activity():
        info = activity.info()
        event.setdefault("session_id", info.workflow_id)
        event.setdefault("activity", info.activity_type)
        event.setdefault("attempt", info.attempt)
    core = event.pop("temporal_log", None)
    if core is not None:  # a line of the SDK core, forwarded by the runtime
        event.setdefault("target", getattr(core, "target", None))
        fields = getattr(core, "fields", None)
        if fields:
            event.setdefault("fields", fields)
    return event


def add_record_extra(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """A standard-library line's logger name and the fields its call passed in `extra`."""
    record = event.get("_record")
    if isinstance(record, logging.LogRecord):
        event.setdefault("logger", record.name)
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRS and not key.startswith("_"):
                event.setdefault(key, value)
    return event


def _shared() -> list[Processor]:
    """What every line gets, ours and the libraries'."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        add_temporal_context,
        structlog.processors.TimeStamper(fmt="iso"),
    ]


def configure_logging(level: str = "info", stream: IO[str] | Any = None) -> None:
    """JSON lines at `level` on `stream` (default stderr) for every logger in the process; the
    chatty libraries stay at warning unless `level` is debug."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[add_record_extra, *_shared()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            # Tracebacks as data, without their frames' locals (a worker's may hold keys).
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            # ASCII JSON: a line stays one line whatever text it carries (generated code's
            # messages, term names): control and non-ASCII characters are written as escapes.
            structlog.processors.JSONRenderer(ensure_ascii=True),
        ],
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    logging.basicConfig(level=numeric, handlers=[handler], force=True)
    logging.captureWarnings(True)
    for name in CHATTY:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    # The SDK's loggers log at the configured level (workflow lines were dropped before).
    logging.getLogger("temporalio").setLevel(logging.NOTSET)
    # Their details go into fields of the JSON line, not onto the end of the message.
    workflow.logger.workflow_info_on_message = False
    activity.logger.activity_info_on_message = False
    structlog.configure(
        processors=[*_shared(), structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
