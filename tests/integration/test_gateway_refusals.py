"""What a session cannot do through its gateway: another provider path, another placeholder.

The real CLI under real bwrap, against the scripted provider over TLS (docs/gateway.md). A
session's Bash calls its own gateway (``$ANTHROPIC_BASE_URL``, through its proxy when
confined) with ``curl``:

* another provider path (``POST /v1/complete``) with its own placeholder: answered 404
  ``not_found_error`` by the gateway, never forwarded; a ``request`` row refused ``path`` and
  the final record's ``gateway.refused`` names it (``path POST /v1/complete``);
* a made-up placeholder on the harness's own path: answered 401 ``authentication_error``,
  never forwarded; refused ``placeholder`` and counted;
* another session's placeholder: two sessions run at once, each writes its own placeholder into
  its workspace, the test hands each the other's (no session can learn one by itself), and
  each presents it to its own gateway: refused ``placeholder`` and counted in its own counts.

The harness's own requests go on being forwarded: each session is ``recorded``, and the
provider saw exactly the harness's requests (the refused ones never reached it).

Seen red by weakening the gateway: the path allow-list widened to every POST (the
``/v1/complete`` call forwarded: no ``path`` refusal); the placeholder compared as "any
non-empty key" (the other session's placeholder answered 200, not 401).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow,
              pytest.mark.timeout(400)]  # fmt: skip

MESSAGES_BODY = ('{"model":"claude-opus-4-8","max_tokens":1,'
                 '"messages":[{"role":"user","content":"gateway refusal probe"}]}')


def _answer(workspace: Path, name: str) -> tuple[str, dict[str, object]]:
    attempts = workspace / "attempts"
    body = json.loads((attempts / f"{name}.json").read_text())
    return (attempts / f"{name}.status").read_text().strip(), body


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_another_path_and_a_made_up_placeholder_are_refused_and_counted(
        network: str, harness: Path, bwrap: str) -> None:
    probe, task = "GW-PATH", "gateway refusals: call what the harness never calls"
    calls = [
        kit.bash("t1", gk.curl("$ANTHROPIC_BASE_URL/v1/complete", "complete",
                               key="$ANTHROPIC_API_KEY")),
        kit.bash("t2", gk.curl("$ANTHROPIC_BASE_URL/v1/messages?beta=true", "made_up",
                               key="sk-ant-made-up-placeholder-0000", body=MESSAGES_BODY)),
    ]
    with kit.host_dir("hw-gw-path-") as root, gk.host(root) as h:
        corpus = kit.write_corpus(root / "corpus", {probe: task})
        kit.write_script(root / "scripts", probe, task, calls[:1], calls[1:])
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            done = gk.run(h, served, corpus, batch, harness, network, "--retries", "0")
            assert done.returncode == 0, done.stderr
            assert served.requests == {probe: 3}  # the harness's three turns, nothing else
            assert served.unmatched == 0 and served.refused_credentials == 0

        workspace = gk.workspace(batch, probe)
        status, body = _answer(workspace, "complete")
        assert status == "404" and body["type"] == "error"
        assert body["error"]["type"] == "not_found_error"  # type: ignore[index]
        status, body = _answer(workspace, "made_up")
        assert status == "401"
        assert body["error"]["type"] == "authentication_error"  # type: ignore[index]

        rows = gk.request_rows(batch, probe, 1)
        refused = [(r["refused"], r["method"], r["path"], r["status"]) for r in rows
                   if r.get("refused")]
        assert sorted(refused) == [("path", "POST", "/v1/complete", 404),
                                   ("placeholder", "POST", "/v1/messages?beta=true", 401)]
        forwarded = [r for r in rows if not r.get("refused")]
        assert len(forwarded) == 3 and {r["status"] for r in forwarded} == {200}
        final = gk.final_of(batch, probe, 1)
        assert final["state"] == "recorded"
        assert final["gateway"]["forwarded"] == 3
        assert final["gateway"]["refused"] == {"path POST /v1/complete": 1, "placeholder": 1}


def _both_written(pid: int) -> list[Path]:
    """Both sessions' ``attempts/mine.txt``, once each holds a line; else empty."""
    found = gk.live_workspace_files(pid, "mine.txt")
    return found if len(found) == 2 and all(p.read_text().strip() for p in found) else []


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_another_sessions_placeholder_is_refused_and_counted_in_the_presenters_counts(
        network: str, harness: Path, bwrap: str) -> None:
    tasks = {"GW-SWAP-A": "gateway swap: session A presents B's key",
             "GW-SWAP-B": "gateway swap: session B presents A's key"}
    wait_then_present = (
        'mkdir -p attempts; echo "$ANTHROPIC_API_KEY" > attempts/mine.txt; '
        "for i in $(seq 900); do [ -s attempts/theirs.txt ] && break; sleep 0.1; done; "
        + gk.curl("$ANTHROPIC_BASE_URL/v1/messages?beta=true", "theirs",
                  key="$(cat attempts/theirs.txt)", body=MESSAGES_BODY))
    with kit.host_dir("hw-gw-swap-") as root, gk.host(root) as h:
        corpus = kit.write_corpus(root / "corpus", tasks)
        for probe, task in tasks.items():
            kit.write_script(root / "scripts", probe, task, [kit.bash("t1", wait_then_present)])
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            running = gk.start(h, served, corpus, batch, harness, network, "--retries", "0",
                               "--concurrency", "2")
            try:
                mine = kit.wait_for(lambda: _both_written(running.pid), timeout_s=240,
                                    what="both sessions' placeholders in their workspaces")
                first, second = (p.read_text().strip() for p in mine)
                assert first != second
                gk.hand_over(mine[0].with_name("theirs.txt"), second)
                gk.hand_over(mine[1].with_name("theirs.txt"), first)
                _, stderr = running.communicate(timeout=kit.CLI_TIMEOUT_S)
                assert running.returncode == 0, stderr
            finally:
                if running.returncode is None:
                    kit.kill_group(running)
            assert served.requests == dict.fromkeys(tasks, 2)  # the harness's turns only
            assert served.refused_credentials == 0

        held = {}
        for probe in tasks:
            workspace = gk.workspace(batch, probe)
            held[probe] = (workspace / "attempts" / "mine.txt").read_text().strip()
            status, body = _answer(workspace, "theirs")
            assert status == "401"
            assert body["error"]["type"] == "authentication_error"  # type: ignore[index]
            final = gk.final_of(batch, probe, 1)
            assert final["state"] == "recorded"
            assert final["gateway"]["refused"] == {"placeholder": 1}
            assert final["gateway"]["forwarded"] == 2
            refused = [r for r in gk.request_rows(batch, probe, 1) if r.get("refused")]
            assert [(r["refused"], r["status"]) for r in refused] == [("placeholder", 401)]
        assert {first, second} == set(held.values())  # each presented the other's
