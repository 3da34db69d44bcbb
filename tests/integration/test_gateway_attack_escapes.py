"""A session that puts terminal escapes and markup into what the provider echoes, and tries to
get its gateway to hand back the real key.

The host's credential is a canary API key (tests/integration/gatewaykit.py) that the
scripted provider, over TLS, takes alone. A stand-in (tests/integration/gwattack.py) sends
its gateway requests whose ``model`` is ``EVIL`` (ESC sequences that retitle and clear a
terminal, BEL, CR, LF, NUL, a bidi override, ``<script>`` markup): the scripted provider
echoes it as the served model, so it lands in the request rows (``model``,
``requested_model``) and in every view of the batch; once streamed and once not. It also
sends requests shaped to make the gateway reflect the credential: a ``Connection`` header
naming ``x-api-key`` and ``authorization``, the placeholder in both key headers, an
``Expect: 100-continue``, and a bad path with escapes percent-encoded in it.

Rule (docs/gateway.md, "What crosses into a sandbox now"; docs/cli.md, "What a session
wrote, on the terminal"): the canary is in no file of the batch (kept streams decompressed);
no output of ``run``, ``status``, ``show``, ``report`` (text, ``--json``, ``--html``) or
``grade`` holds a raw control character, C1 control or bidi override; the HTML page holds
no markup the session wrote; the JSON outputs parse and keep what was sent (escaped as
JSON); the canary is in none of them either.

Seen red, each weakening alone: `campaign._terminal_text.one_line` returning its text as it
is (``show`` printed the ESC, BEL, bidi override and NUL of the served model raw); the
gateway's placeholder made the real key (``Gateway.__init__``: the canary was in the
workspace's ``attempts/attack.json``, where the stand-in writes the key it holds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

EVIL = "claude-\x1b]0;owned\x07\x1b[2J\x1b[31m<script>alert(1)</script>\u202e\r\n\x00x"
"""A model name no terminal, page or JSON reader may obey."""
RAW: re.Pattern[str] = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What no terminal output may hold raw (tab and newline are the outputs' own)."""

ESCAPE_ATTACK = r'''
EVIL = @EVIL@
for stream in (False, True):
    body = json.dumps({"model": EVIL, "max_tokens": 8, "stream": stream,
                       "messages": [{"role": "user", "content": "gateway attack"}]}).encode()
    REPORT["evil_%s" % stream] = exchange(request("/v1/messages?beta=true", body))
REPORT["connection_named"] = exchange(request(
    "/v1/messages?beta=true", extra="Connection: x-api-key, authorization\r\n"))
REPORT["both_keys"] = exchange(request(
    "/v1/messages?beta=true", extra="Authorization: Bearer %s\r\n" % KEY))
REPORT["expect"] = exchange(request("/v1/messages?beta=true", extra="Expect: 100-continue\r\n"))
REPORT["key"] = KEY  # what the session holds goes into the batch, as a dump would
REPORT["encoded_escape_path"] = exchange(request("/v1/%1b]0;owned%07%1b[2J"))
'''.replace("@EVIL@", repr(EVIL))


def _views(batch: Path, html: Path) -> dict[str, str]:
    """Each view of the batch a colleague runs, its output (stdout and stderr)."""
    views = {}
    for name, args in {
        "status": ["status", str(batch)], "status-json": ["status", str(batch), "--json"],
        "show": ["show", str(batch), "present", "ESC-1", "s1"],
        "report": ["report", str(batch)], "report-json": ["report", str(batch), "--json"],
        "report-html": ["report", str(batch), "--html", str(html)],
        "grade": ["grade", str(batch)],
    }.items():
        done = kit.cli(*args, env=kit.base_env())
        assert done.returncode in (0, 1), (name, done.stderr)
        views[name] = done.stdout + done.stderr
        views[name + "-out"] = done.stdout
    views["html"] = html.read_text(encoding="utf-8")
    return views


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_echoed_escapes_are_never_obeyed_and_the_key_is_nowhere(network: str,
                                                                 bwrap: str) -> None:
    with kit.host_dir("hw-gwa-esc-") as root, gk.host(root) as h:
        corpus = kit.write_corpus(root / "corpus", {"ESC-1": "escape now."}, tools=["Bash"])
        harness = kit.write_harness(root / "claude", ga.standin(ESCAPE_ATTACK))
        kit.write_script(root / "scripts", "unused", "no task says this")
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            done = gk.run(h, served, corpus, batch, harness, network, "--retries", "0")
            assert served.refused_credentials == 0  # every request carried the canary
        assert done.returncode == 0, done.stderr
        seen = ga.report(root, "ESC-1")
        assert seen["evil_False"] == [200] and seen["evil_True"] == [200], seen
        rows = gk.request_rows(batch, "ESC-1", 1)
        assert [r["model"] for r in rows if r.get("model") == EVIL] == [EVIL, EVIL]
        assert gk.holding(batch, h.secret) == []
        views = _views(batch, root / "report.html")
        views["run"] = done.stdout + done.stderr
        assert "owned" in views["show"] and "owned" in views["report"]  # it is shown, escaped
        for name, text in views.items():
            assert h.secret not in text, name
            raw = RAW.findall(text)
            assert raw == [], (name, raw[:5])
        assert "<script>alert" not in views["html"]
        json.loads(views["status-json-out"])
        assert EVIL in set(_strings(json.loads(views["report-json-out"])))  # kept, as JSON


def _strings(value: object) -> Iterator[str]:
    """Every string in a parsed JSON value, keys and values."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
