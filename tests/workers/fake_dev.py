"""A live process that is, as far as its record's reader can tell, `policyforge dev`: the
console script `policyforge` run by its interpreter with `dev` (as the kernel shows a script
started through its shebang), sleeping instead of serving."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from workers.dev.dev_record import DevRecord, process_command, process_start


def environ(home: Path, **given: str) -> dict[str, str]:
    """A newcomer's environment: no Temporal, S3 or policyforge settings; no Temporal profile."""
    empty = home / "temporal.toml"
    empty.write_text("")
    return {"HOME": str(home), "TEMPORAL_CONFIG_FILE": str(empty), **given}


@contextmanager
def fake_dev(folder: Path) -> Iterator[subprocess.Popen]:
    """Run the stand-in in `folder` until the block ends."""
    script = folder / "policyforge"
    script.write_text("import time\ntime.sleep(300)\n")
    proc = subprocess.Popen([sys.executable, str(script), "dev"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def record_of(pid: int, /, **changes: object) -> DevRecord:
    """The record the dev at `pid` would write (its addresses the tests' usual ones)."""
    base = DevRecord(
        pid=pid,
        pid_start=process_start(pid),
        temporal_address="127.0.0.1:17433",
        namespace="default",
        ui_url="http://localhost:18433",
        dashboard_url="http://localhost:18634",
        s3_endpoint="http://127.0.0.1:18333",
        s3_embedded=True,
        bucket="policyforge",
        queue_prefix="policyforge",
        command=process_command(pid) or (),
    )
    return replace(base, **changes)  # type: ignore[arg-type]
