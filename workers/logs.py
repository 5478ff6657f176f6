"""structlog JSON logging for every process (workers, CLI, dev)."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "info", stream=sys.stderr) -> None:
    """JSON lines at `level` on `stream` for our logs; the libraries' chatter stays at warning."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    logging.basicConfig(level=numeric, stream=stream, format="%(message)s", force=True)
    # Temporal's and botocore's own chatter stays at warning unless asked for.
    for noisy in ("temporalio", "botocore", "boto3", "urllib3", "s3transfer"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )
