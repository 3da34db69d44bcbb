"""The session environment (RC-03) and its --args FD payload."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import session_environment, setenv_payload

PLACEHOLDER = "hw-placeholder-0d9c4e7a"
"""A session's key as its gateway gives it (RC-03: never the host's credential)."""
CFG = Path("/var/tmp/headwater-campaign/cfg/77-p1-r1-x")
LOG = Path("/srv/batch/sessions/present/p1/r1/log")


def test_setenv_payload_is_nul_separated_setenv_triples() -> None:
    payload = setenv_payload({"HOME": "/cfg", "ANTHROPIC_API_KEY": "k=v with space"})
    assert payload == (
        b"--setenv\x00HOME\x00/cfg\x00--setenv\x00ANTHROPIC_API_KEY\x00k=v with space\x00"
    )


def test_setenv_payload_empty_mapping_and_empty_value() -> None:
    assert setenv_payload({}) == b""
    assert setenv_payload({"E": ""}) == b"--setenv\x00E\x00\x00"


def test_setenv_payload_encodes_utf8() -> None:
    assert setenv_payload({"LANG": "C.UTF-8", "N": "é"}).endswith(b"N\x00\xc3\xa9\x00")


@pytest.mark.parametrize("name", ["", "A=B", "A\x00B"], ids=["empty", "equals", "nul"])
def test_setenv_payload_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        setenv_payload({name: "v"})


def test_setenv_payload_rejects_nul_in_value_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY") as caught:
        setenv_payload({"ANTHROPIC_API_KEY": "sk-secret\x00tail"})
    assert "sk-secret" not in str(caught.value)


def test_session_environment_with_key_and_provider_is_exactly_rc03() -> None:
    env = session_environment(
        config_dir=CFG, log_dir=LOG, provider_url="http://127.0.0.1:8123",
        provider_key=("ANTHROPIC_API_KEY", PLACEHOLDER),
    )
    assert env == {
        "HOME": str(CFG),
        "CLAUDE_CONFIG_DIR": str(CFG),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HEADWATER_LOG_DIR": str(LOG),
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8123",
        "ANTHROPIC_API_KEY": PLACEHOLDER,
    }


def test_a_login_session_gets_its_placeholder_as_a_bearer_token_and_no_api_key() -> None:
    # A host login's gateway takes the placeholder as ``Authorization: Bearer``: the harness
    # reads it from ANTHROPIC_AUTH_TOKEN, and no API key variable is set beside it.
    env = session_environment(
        config_dir=CFG, log_dir=LOG, provider_url="http://127.0.0.1:8123",
        provider_key=("ANTHROPIC_AUTH_TOKEN", PLACEHOLDER),
    )
    assert env["ANTHROPIC_AUTH_TOKEN"] == PLACEHOLDER
    assert "ANTHROPIC_API_KEY" not in env


def test_session_environment_without_key_or_provider_sets_no_anthropic_vars() -> None:
    env = session_environment(config_dir=CFG, log_dir=LOG, provider_url=None, provider_key=None)
    assert set(env) == {
        "HOME",
        "CLAUDE_CONFIG_DIR",
        "PATH",
        "LANG",
        "DISABLE_AUTOUPDATER",
        "DISABLE_TELEMETRY",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "HEADWATER_LOG_DIR",
    }


def test_session_environment_reads_nothing_from_the_runner_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-the-runner")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-runner")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://runner.invalid")
    monkeypatch.setenv("HW_CANARY", "canary")
    env = session_environment(config_dir=CFG, log_dir=LOG, provider_url=None, provider_key=None)
    assert "ANTHROPIC_API_KEY" not in env
    assert "ANTHROPIC_AUTH_TOKEN" not in env
    assert "ANTHROPIC_BASE_URL" not in env
    assert "HW_CANARY" not in env


def test_session_environment_rejects_relative_dirs_and_empty_provider() -> None:
    with pytest.raises(ValueError, match="config_dir"):
        session_environment(
            config_dir=Path("cfg"), log_dir=LOG, provider_url=None, provider_key=None
        )
    with pytest.raises(ValueError, match="log_dir"):
        session_environment(
            config_dir=CFG, log_dir=Path("log"), provider_url=None, provider_key=None
        )
    with pytest.raises(ValueError, match="provider_url"):
        session_environment(config_dir=CFG, log_dir=LOG, provider_url="", provider_key=None)


@pytest.mark.parametrize("key", [("HW_KEY", PLACEHOLDER), ("ANTHROPIC_API_KEY", "")],
                         ids=["other-variable", "empty-value"])
def test_session_environment_refuses_a_key_elsewhere_or_empty(key: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match=key[0]) as caught:
        session_environment(config_dir=CFG, log_dir=LOG, provider_url=None, provider_key=key)
    assert PLACEHOLDER not in str(caught.value)
