"""The gateway's parts on their own: the stream observer, the system digest, the scrubber,
the credential holder, the allow-list (sandbox/gateway)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

import pytest

from sandbox._config import Credentials
from sandbox._errors import CredentialsMissing
from sandbox.gateway import Usage
from sandbox.gateway._digest import system_digest
from sandbox.gateway._forward import Scrubber
from sandbox.gateway._login import CredentialHolder, LoginUnusable
from sandbox.gateway._paths import allowed
from sandbox.gateway._sse import MAX_LINE_BYTES, ResponseObserver

from . import provider as wire

if TYPE_CHECKING:
    from pathlib import Path

SSE = "text/event-stream; charset=utf-8"


def fed(observer: ResponseObserver, data: bytes, size: int) -> ResponseObserver:
    for start in range(0, len(data), size):
        observer.feed(data[start:start + size])
    observer.end()
    return observer


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_the_observer_reads_start_and_delta_however_the_stream_is_cut(size: int) -> None:
    seen = fed(ResponseObserver(SSE), wire.FIRST_EVENTS + wire.LAST_EVENTS, size)
    assert (seen.message_id, seen.model, seen.stop_reason) == (
        wire.MESSAGE_ID, wire.SERVED_MODEL, "end_turn")
    assert seen.usage == Usage(input_tokens=11, output_tokens=wire.FINAL_OUTPUT_TOKENS,
                               cache_creation_input_tokens=5, cache_read_input_tokens=7,
                               cache_creation_5m_tokens=2, cache_creation_1h_tokens=3)


def test_a_later_field_replaces_the_earlier_and_others_stay() -> None:
    stream = (b'data: {"type":"message_start","message":{"id":"m","usage":'
              b'{"input_tokens":5,"output_tokens":1}}}\r\n\r\n'
              b'data: {"type":"message_delta","usage":{"output_tokens":9,"input_tokens":6}}\n\n'
              b'data: {"type":"message_delta","usage":{"output_tokens":12}}\n\n')
    seen = fed(ResponseObserver(SSE), stream, 5)
    assert seen.usage == Usage(input_tokens=6, output_tokens=12)


def test_an_over_long_line_is_skipped_and_not_held() -> None:
    huge = b'event: content_block_delta\ndata: {"type":"content_block_delta","text":"' + (
        b"x" * (MAX_LINE_BYTES + 10)) + b'"}\n\n'
    observer = ResponseObserver(SSE)
    for start in range(0, len(huge), 4096):
        observer.feed(huge[start:start + 4096])
        assert len(observer._line) <= MAX_LINE_BYTES
    observer.feed(wire.FIRST_EVENTS)
    observer.end()
    assert observer.message_id == wire.MESSAGE_ID


def test_a_message_start_on_an_over_long_line_is_not_read() -> None:
    line = (b'data: {"type":"message_start","message":{"id":"m1","pad":"'
            + b"p" * MAX_LINE_BYTES + b'"}}\n\n')
    assert fed(ResponseObserver(SSE), line, 1000).message_id is None


def test_other_events_and_other_content_types_give_nothing() -> None:
    text = b'event: ping\ndata: {"type":"message_start","message":{"id":"no"}}\n\n'
    assert fed(ResponseObserver(SSE), text, 3).message_id is None
    assert fed(ResponseObserver("text/html"), wire.FIRST_EVENTS, 50).message_id is None
    error = json.dumps(wire.OVERLOADED).encode()
    assert fed(ResponseObserver("application/json"), error, 5).usage is None


BILLING = {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.69c; x;"}


def expected(*texts: str) -> str:
    compact = json.dumps(list(texts), ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(compact.encode()).hexdigest()


def test_the_digest_leaves_out_the_billing_block_and_the_date_line() -> None:
    one = {"system": [BILLING, {"type": "text", "text": "Agent."},
                      {"type": "text", "text": "Rules.\nToday's date is 2026-12-03.\nEnd.",
                       "cache_control": {"type": "ephemeral"}}]}
    other = {"system": [{**BILLING, "text": BILLING["text"].replace("69c", "8d3")},
                        {"type": "text", "text": "Agent."},
                        {"type": "text", "text": "Rules.\n - Today's date: 2027-01-09\nEnd."}]}
    assert system_digest(one) == system_digest(other) == expected("Agent.", "Rules.\nEnd.")
    changed = {"system": [BILLING, {"type": "text", "text": "Agent!"},
                          {"type": "text", "text": "Rules.\nEnd."}]}
    assert system_digest(changed) != system_digest(one)


def test_a_string_system_is_one_text_and_none_has_no_digest() -> None:
    assert system_digest({"system": "Be brief."}) == expected("Be brief.")
    assert system_digest({"messages": []}) is None
    assert system_digest([1, 2]) is None
    assert system_digest({"system": [BILLING]}) is None


SECRET = b"sk-ant-secret-123"


@pytest.mark.parametrize("size", [1, 3, 16, 17, 100])
def test_the_scrubber_masks_a_secret_cut_across_chunks(size: int) -> None:
    text = b"before " + SECRET + b" middle sk-ant- " + SECRET + b"sk-a"
    scrub = Scrubber(SECRET)
    out = b"".join(scrub.feed(text[i:i + size]) for i in range(0, len(text), size)) + scrub.end()
    assert out == text.replace(SECRET, b"*" * len(SECRET))


def test_the_scrubber_holds_back_nothing_that_cannot_begin_the_secret() -> None:
    scrub = Scrubber(SECRET)
    assert scrub.feed(b"data: {}\n\n") == b"data: {}\n\n"
    assert scrub.feed(b"ends with sk") == b"ends with "
    assert scrub.end() == b"sk"


def login_file(tmp_path: Path, token: str | None, expires_ms: object) -> Credentials:
    path = tmp_path / ".credentials.json"
    oauth = {"expiresAt": expires_ms} | ({"accessToken": token} if token else {})
    path.write_text(json.dumps({"claudeAiOauth": oauth}))
    return Credentials(credentials_file=path, api_key_env=None, api_key=None)


def test_a_login_expires_at_its_expires_at_in_milliseconds(tmp_path: Path) -> None:
    now = [1_000.0]
    holder = CredentialHolder(login_file(tmp_path, "tok", 1_000_500), clock=lambda: now[0])
    assert holder.current().secret == "tok"
    now[0] = 1_000.5
    with pytest.raises(LoginUnusable, match=r"expired at 1970-01-01 00:16:40 UTC"):
        holder.current()


def test_a_float_expiry_is_read_and_an_unreadable_one_refuses(tmp_path: Path) -> None:
    """An expiry that cannot be read fails closed: it is not taken for "never expires"."""
    now = [1_000.0]
    holder = CredentialHolder(login_file(tmp_path, "tok", 1_000_500.0), clock=lambda: now[0])
    assert holder.current().secret == "tok"
    now[0] = 1_000.5
    with pytest.raises(LoginUnusable, match="expired at"):
        holder.current()
    for bad in ("1000500", True, [1]):
        with pytest.raises(CredentialsMissing, match="expiresAt that is not a number"):
            CredentialHolder(login_file(tmp_path, "tok", bad))


def test_a_login_without_a_token_cannot_open_and_names_no_content(tmp_path: Path) -> None:
    with pytest.raises(CredentialsMissing, match=r"holds no claudeAiOauth\.accessToken"):
        CredentialHolder(login_file(tmp_path, None, 1))
    missing = Credentials(credentials_file=tmp_path / "none.json", api_key_env=None,
                          api_key=None)
    with pytest.raises(CredentialsMissing, match="cannot be read"):
        CredentialHolder(missing)


def test_a_login_file_gone_later_is_unusable(tmp_path: Path) -> None:
    credentials = login_file(tmp_path, "tok", 10**15)
    holder = CredentialHolder(credentials)
    assert credentials.credentials_file is not None
    credentials.credentials_file.unlink()
    with pytest.raises(LoginUnusable, match="log in again"):
        holder.current()


def test_the_allow_list_is_the_one_path_the_pinned_cli_sends() -> None:
    assert allowed("POST", "/v1/messages?beta=true")
    for method, target in [("GET", "/v1/messages?beta=true"), ("POST", "/v1/messages"),
                           ("POST", "/v1/messages?beta=true&x=1"),
                           ("POST", "/v1/messages/count_tokens?beta=true"),
                           ("POST", "http://127.0.0.1/v1/messages?beta=true")]:
        assert not allowed(method, target)
