"""Connecting takes Temporal's standard client configuration (a TOML profile, TEMPORAL_* overrides,
TLS, API key), and the variables this project always read keep their meaning."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from workers.client import ClientConfigError, connect, connect_config
from workers.settings import Settings

_OURS = ("TEMPORAL_", "POLICYFORGE_TEMPORAL_PORT")


@pytest.fixture
def clean_env(monkeypatch, tmp_path: Path) -> Path:
    """No TEMPORAL_* variable from the test process; an empty config file (not the user's)."""
    import os

    for name in list(os.environ):
        if name.startswith(_OURS):
            monkeypatch.delenv(name)
    empty = tmp_path / "none.toml"
    empty.write_text("")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(empty))
    return tmp_path


def _profile(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


async def test_a_profile_in_a_config_file_points_the_client_at_the_server(
    temporal_env, clean_env, monkeypatch
):
    address = temporal_env.client.service_client.config.target_host
    config = _profile(
        clean_env / "temporal.toml",
        f"""
[profile.default]
address = "127.0.0.1:1"

[profile.pftest]
address = "{address}"
namespace = "default"
""",
    )
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", "pftest")
    client = await connect(Settings())
    assert client.service_client.config.target_host == address
    assert client.namespace == "default"
    # It really talks to the server.
    await client.count_workflows()

    # Without TEMPORAL_PROFILE, the file's default profile, where nothing listens.
    monkeypatch.delenv("TEMPORAL_PROFILE")
    assert connect_config(Settings())["target_host"] == "127.0.0.1:1"
    # TEMPORAL_ADDRESS overrides the profile, as the temporal CLI has it.
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)
    client = await connect(Settings())
    assert client.service_client.config.target_host == address


def test_tls_and_api_key_from_a_profile(clean_env, monkeypatch):
    ca = clean_env / "ca.pem"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    config = _profile(
        clean_env / "cloud.toml",
        f"""
[profile.cloud]
address = "ns.acct.tmprl.cloud:7233"
namespace = "ns.acct"
api_key = "tmprl-key"

[profile.cloud.tls]
server_name = "ns.acct.tmprl.cloud"
server_ca_cert_path = "{ca}"
""",
    )
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", "cloud")
    got = connect_config(Settings())
    assert got["target_host"] == "ns.acct.tmprl.cloud:7233"
    assert got["namespace"] == "ns.acct" and got["api_key"] == "tmprl-key"
    assert isinstance(got["tls"], TLSConfig)
    assert got["tls"].domain == "ns.acct.tmprl.cloud"
    assert got["tls"].server_root_ca_cert == ca.read_bytes()
    # TEMPORAL_NAMESPACE overrides the profile's.
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "other")
    assert connect_config(Settings())["namespace"] == "other"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        # Nothing configured: the local server, the default namespace, no TLS.
        ({}, {"target_host": "localhost:7233", "namespace": "default"}),
        ({"POLICYFORGE_TEMPORAL_PORT": "7299"}, {"target_host": "localhost:7299"}),
        ({"TEMPORAL_ADDRESS": "t:7233", "TEMPORAL_NAMESPACE": "ns"}, {"target_host": "t:7233"}),
        # An API key turns TLS on; an empty one (compose's default) is no key.
        ({"TEMPORAL_API_KEY": "k"}, {"api_key": "k", "tls": True}),
        ({"TEMPORAL_API_KEY": ""}, {"api_key": None, "tls": None}),
        ({"TEMPORAL_API_KEY": "", "TEMPORAL_TLS": "false"}, {"api_key": None, "tls": False}),
        # TEMPORAL_TLS: on for 1, true, yes; off for anything else, empty included.
        ({"TEMPORAL_TLS": "yes"}, {"tls": "TLSConfig"}),
        ({"TEMPORAL_TLS": "1"}, {"tls": "TLSConfig"}),
        ({"TEMPORAL_TLS": ""}, {"tls": None}),
        ({"TEMPORAL_TLS": "no"}, {"tls": False}),
        ({"TEMPORAL_TLS": "false"}, {"tls": False}),
    ],
)
def test_the_variables_this_project_always_read_keep_their_meaning(
    clean_env, monkeypatch, env, expected
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    got = connect_config(Settings())
    for key, value in expected.items():
        if value == "TLSConfig":
            assert isinstance(got.get(key), TLSConfig), got
        else:
            assert got.get(key) == value, got


def test_a_configuration_that_cannot_be_read_says_so_in_one_line(clean_env, monkeypatch):
    monkeypatch.setenv("TEMPORAL_PROFILE", "nope")
    with pytest.raises(ClientConfigError, match="Profile 'nope' not found"):
        connect_config(Settings())
    monkeypatch.delenv("TEMPORAL_PROFILE")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(clean_env / "missing.toml"))
    with pytest.raises(ClientConfigError, match="missing.toml: no such file"):
        connect_config(Settings())
    # The embedded server (`policyforge dev`) reads no profile at all.
    assert connect_config(Settings(), profile=False)["target_host"] == "localhost:7233"
