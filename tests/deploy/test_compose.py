"""docker-compose.yml checked without a Docker engine: the compose schema, the image's entry
points, the set-up jobs' scripts, startup order, and the settings in .env.example."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from workers.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = ROOT / ".venv" / "share" / "compose-spec" / "compose-spec.json"
POLICYFORGE_DOCKERFILE = "deploy/Dockerfile"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _ours(service: dict) -> bool:
    return service.get("build", {}).get("dockerfile") == POLICYFORGE_DOCKERFILE


def test_compose_file_follows_the_compose_specification(compose):
    if not SCHEMA.exists():
        pytest.skip("the compose schema is installed by `make setup` (needs npm)")
    schema = json.loads(SCHEMA.read_text())
    # The schema names draft 2019-09 under a URL the validator library does not know.
    validator = jsonschema.Draft201909Validator(schema)
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors)


def test_every_policyforge_service_runs_an_entry_point_the_image_provides(compose):
    dockerfile = (ROOT / POLICYFORGE_DOCKERFILE).read_text()
    assert 'ENTRYPOINT ["policyforge"]' in dockerfile
    assert 'policyforge = "workers.cli:main"' in (ROOT / "pyproject.toml").read_text()
    for source in re.findall(r"^COPY (\S+) ", dockerfile, re.MULTILINE):
        assert (ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"
    ours = {name: s for name, s in compose["services"].items() if _ours(s)}
    assert {"llm-worker", "train-worker", "judge-worker", "train-worker-gpu"} <= set(ours)
    for name, service in ours.items():
        command = service["command"]
        args = _parser().parse_args(command)  # SystemExit on a command the CLI does not have
        assert args.command == "worker", name
    pools = {tuple(ours[n]["command"][1:]) for n in ("llm-worker", "train-worker", "judge-worker")}
    assert pools == {("llm",), ("train",), ("judge",)}


def test_set_up_jobs_run_scripts_that_exist_and_parse(compose):
    mounts = {}
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            host, _, rest = volume.partition(":")
            if host.startswith("./"):
                mounts[rest.split(":")[0]] = ROOT / host[2:]
    scripts = []
    for name, service in compose["services"].items():
        words = []
        for part in ("entrypoint", "command"):
            value = service.get(part) or []
            words += value if isinstance(value, list) else shlex.split(value)
        for word in " ".join(words).split():
            for mount, local in mounts.items():
                if word.startswith(mount + "/"):
                    path = local / word[len(mount) + 1 :]
                    assert path.exists(), f"{name} runs {word}, missing at {path}"
                    scripts.append(path)
    assert {p.name for p in scripts} >= {"setup.sh", "init.sh"}
    for path in set(scripts):
        subprocess.run(["sh", "-n", str(path)], check=True)


def test_services_start_in_order(compose):
    services = compose["services"]
    for name, service in services.items():
        for dep, spec in (service.get("depends_on") or {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            condition = spec["condition"]
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], f"{dep} has no healthcheck"
            if condition == "service_completed_successfully":
                assert "restart" not in services[dep], f"{dep} is a job; it must not restart"
    # The workers wait for Temporal's namespace and the bucket; the server for its schema.
    for worker in ("llm-worker", "train-worker", "judge-worker"):
        assert set(services[worker]["depends_on"]) == {"temporal-init", "minio-init"}
    assert "temporal-schema" in services["temporal"]["depends_on"]
    assert services["train-worker-gpu"]["profiles"] == ["gpu"]
    devices = services["train-worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]


def test_every_setting_is_in_env_example():
    # ${VAR} and ${VAR:-default} are settings; $${VAR} is the container's own variable.
    used = set(re.findall(r"(?<!\$)\$\{([A-Z0-9_]+)(?::-[^}]*)?\}", COMPOSE.read_text()))
    example = {
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert used - example == set(), "add these to .env.example"
    assert example - used == set(), ".env.example lists settings compose does not use"
