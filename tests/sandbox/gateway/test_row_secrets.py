"""The real credential never lands in a request's row, whatever the provider sends back:
a row is the batch's evidence (the ledger, `show`, the report), and the key must reach the
provider and nowhere else (RC-03, docs/gateway.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from sandbox._config import Credentials
from sandbox._errors import CredentialsMissing
from sandbox.gateway import MAX_TEXT, open_gateway, open_upstream
from sandbox.gateway._forward import masked
from sandbox.gateway._login import CredentialHolder

from .conftest import REAL_KEY, Gate
from .test_gateway import post, write_login

if TYPE_CHECKING:
    from pathlib import Path

    from .provider import LoopbackProvider

pytestmark = pytest.mark.anyio


async def test_a_provider_that_echoes_the_key_in_its_metadata_leaves_it_out_of_the_row(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "key-in-metadata"  # request-id, message id, model, stop_reason: the key
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await post(gateway)
    assert response.status_code == 200
    assert REAL_KEY not in response.text and REAL_KEY not in str(response.headers)
    (row,) = gate.rows
    assert REAL_KEY not in repr(row)
    assert row.request_id is not None and "*" * 20 in row.request_id  # masked, not dropped


async def test_a_provider_answering_garbage_that_holds_the_key_leaves_it_out_of_the_row(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "garbage-key"  # h11's error quotes the status line it could not read
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await post(gateway)
    assert response.status_code == 502
    assert REAL_KEY not in response.text
    (row,) = gate.rows
    assert row.upstream_error is not None and "BROKEN" in row.upstream_error
    assert REAL_KEY not in repr(row)
    assert REAL_KEY[:12] not in repr(row), "a cut key is still part of the key"


def test_a_text_cut_inside_the_key_has_the_cut_key_masked() -> None:
    cut = ("x" * 170 + REAL_KEY)[:MAX_TEXT]  # as `bounded` leaves a long error quoting it
    assert masked(cut, REAL_KEY) == "x" * 170 + "*" * (MAX_TEXT - 170)
    assert masked("model sk-ant", REAL_KEY) == "model sk-ant", "too short to be the key"
    assert masked("a " + REAL_KEY + " b", REAL_KEY) == "a " + "*" * len(REAL_KEY) + " b"


def test_an_api_key_a_header_cannot_carry_is_refused_at_the_start_without_quoting_it() -> None:
    # ``KEY="$(cat file)"`` strips a newline, ``export KEY="$(printf 'k\n')"`` keeps it: httpx's
    # error for such a header quoted the key whole into the row's upstream_error
    for bad in (REAL_KEY + "\n", REAL_KEY + " ", "é" + REAL_KEY):
        given = Credentials(credentials_file=None, api_key_env="TEST_KEY", api_key=bad)
        with pytest.raises(CredentialsMissing) as caught:
            CredentialHolder(given)
        assert REAL_KEY not in str(caught.value) and "TEST_KEY" in str(caught.value)


async def test_a_login_token_a_header_cannot_carry_is_a_login_refusal_not_a_quoted_error(
        provider: LoopbackProvider, gate: Gate, tmp_path: Path) -> None:
    login = write_login(tmp_path, "sk-ant-oat01-CANARY-login-token", expires_in_s=3600)
    async with open_upstream(provider.url, login) as upstream, \
            open_gateway(upstream, gate) as gateway:
        assert login.credentials_file is not None
        write_login(tmp_path, "sk-ant-oat01-CANARY-login-token\n", expires_in_s=3600)
        response = await post(gateway, bearer=True)
    assert response.status_code == 401 and provider.requests == []
    (row,) = gate.rows
    assert row.refused == "login" and "CANARY" not in repr(row)
    failure = gateway.stats().login_failure
    assert failure is not None and "CANARY" not in failure


async def test_a_login_expired_before_any_date_is_still_a_login_refusal(
        provider: LoopbackProvider, gate: Gate, tmp_path: Path) -> None:
    # an ``expiresAt`` no date can show (a hand-edited file) must not break the connection
    login = write_login(tmp_path, "sk-ant-oat01-token", expires_in_s=-1e16)
    async with open_upstream(provider.url, login) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await post(gateway, bearer=True)
    assert response.status_code == 401 and provider.requests == []
    assert [row.refused for row in gate.rows] == ["login"]
    assert gateway.stats().login_failure is not None
