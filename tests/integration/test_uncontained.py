"""After the kill: a session whose cgroup did not empty is ``uncontained``, and nothing it left
is read.

Rule (docs/batch.md "Session states", ``uncontained``; docs/confinement.md "Process
containment"): the session's files are read only once every process of it is gone. When
the cgroup kill's bound passes with a process left (or the cgroup cannot be removed), the
runner reads nothing the session left: no copy of its workspace or log into the batch, no
digest of a file it made, no produced artifact, no checker; the attempt ends
``uncontained``, not retryable, and ``record`` exits 1 (a state neither recorded nor
refused, docs/batch.md "Exit statuses").

A process the kernel cannot end is not something a test can make on demand, so the
instrument ``HW_UNCONTAINED=1`` (tests/integration/weaken/sitecustomize.py) ends the
session's cgroup as always and then reports it not contained, through the real ``record``
under real bwrap. The stand-in writes a file in its workspace and one in its log, Reads the
file it made (contained, its result would be the digest of the file's bytes), Writes a
produced file, answers, and the corpus's checker fails loudly (contained, it would leave
``checker.stderr.tail`` and a ``findings_note``).

Seen red: `campaign.supervisor._session._drive` with its ``if not sandbox.contained``
branch removed and the copy into the batch made whatever ``contained`` says (the session
ends ``recorded``, with its workspace kept, the created file digested and the checker run);
`campaign.supervisor._retranscribe.rederive` without its ``uncontained`` line (the
``rederived`` record says ``recorded``).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.supervisor._streams import STREAM_NAME
from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import (
    ANSWERED,
    PROBE,
    STANDIN_WORKSPACE,
    init,
    make_corpus,
    record,
    result,
    tool_result,
    tool_use,
    transcript,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

MADE = "made by the session\n"
SEEN = "     1\tmade by the session"
"""The tool_result text of the stand-in's Read of the file it made."""
STANDIN = r'''#!/usr/bin/python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (uncontained)"); sys.exit(0)
open("made.md", "w").write(MADE)
open("report.md", "w").write("HW-DR-0051\n")
open(os.path.join(os.environ["HEADWATER_LOG_DIR"], "session.log"), "w").write("log\n")
os.write(1, STREAM)
'''


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_an_uncontained_session_is_not_read_after_the_kill(
        tmp_path: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", checker=".headwater/check.sh",
                         extra={".headwater/check.sh": "#!/bin/sh\necho checker ran >&2\nexit 3\n"})
    (corpus / ".headwater" / "check.sh").chmod(0o755)
    stream = (init() + tool_use("r", "Read", {"file_path": "made.md"}, msg="m1")
              + tool_result("r", SEEN)
              + tool_use("w", "Write", {"file_path": "report.md", "content": "x"}, msg="m3")
              + tool_result("w", "File created") + ANSWERED + result())  # fmt: skip
    harness = tmp_path / "claude"
    harness.write_text(STANDIN.replace("MADE", repr(MADE)).replace("STREAM", repr(stream)))
    harness.chmod(0o755)
    monkeypatch.setenv("HW_UNCONTAINED", "1")  # record() passes our environment on
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(kit.WEAKEN_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]))
    try:
        run = record(corpus, batch, harness, "--post-result-grace", "2")
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
    assert run.returncode == 1, run.stdout + run.stderr  # neither recorded nor refused
    (final,) = kit.final_list(batch)
    assert final["state"] == "uncontained", final["reason"]
    assert final["reason"].startswith("uncontained: the session's cgroup still held a process")
    assert "its stream alone said recorded" in final["reason"]  # nothing observed is lost
    assert final["retryable"] is False
    assert final.get("counts", True) is True  # an outcome of its session: resume leaves it
    assert final["cost_usd"] == "0.0123"  # the result line's cost counts
    # No post-session read: no event, no produced listing, no checker, no digest of made.md.
    for key in ("event", "findings_note", "unread_artifacts"):
        assert key not in final, key
    calls = {c["tool"]: c for c in final["calls"]}
    assert calls["Read"]["result"] == sha(SEEN) != sha(MADE)
    session = batch / "sessions" / "present" / PROBE / "r1"
    assert not (session / "workspace").exists()
    assert not (session / "log").exists()
    assert not (session / "checker.stderr.tail").exists()
    assert "checker ran" not in run.stderr
    text, _, events, rows = transcript(batch)
    assert events == []
    assert rows[-1][:3] == [PROBE, "r1", "uncontained"]
    # The end is the sandbox's fact, not the stream's: re-deriving the stream keeps it.
    again = kit.cli("retranscribe", str(batch), env=kit.base_env())
    assert again.returncode == 0, again.stdout + again.stderr
    (redone,) = [r for r in kit.ledger_dicts(batch) if r["kind"] == "rederived"]
    assert (redone["state"], redone["reason"]) == (final["state"], final["reason"])
    assert "event" not in redone and redone["calls"] == final["calls"]
    assert f'{PROBE}/r1 ended uncontained: "uncontained: the session\'s cgroup' in text


def test_a_runner_stopped_while_its_session_is_uncontained_writes_it_uncontained(
        tmp_path: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM while the session runs: the attempt is not written ``killed`` (which resume
    would run again) but ``uncontained``, not retryable, its reason saying both; the runner
    still exits 143 (docs/batch.md "Exit statuses"). Seen red: `run_attempt` writing every
    stopped attempt ``killed`` (its ``progress.uncontained`` branch taken out)."""
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text("#!/usr/bin/python3\nimport os, sys, time\n"
                       "if sys.argv[1:] == ['--version']:\n    print('0.0.0'); sys.exit(0)\n"
                       f"os.write(1, {init()!r})\ntime.sleep(120)\n")
    harness.chmod(0o755)
    monkeypatch.setenv("HW_UNCONTAINED", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(kit.WEAKEN_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env = {**os.environ, "HW_STANDIN_KEY": "sk-standin-not-a-secret"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "campaign", "record", "--corpus", str(corpus), "--probe", PROBE,
         "--arm", "present", "--batch-dir", str(batch), "--harness", str(harness),
         "--provider-url", "http://127.0.0.1:9", "--api-key-env", "HW_STANDIN_KEY",
         "--workspace-path", STANDIN_WORKSPACE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        stream = batch / "sessions" / "present" / PROBE / "r1" / "attempt-1" / STREAM_NAME
        kit.wait_for(lambda: stream.exists() and stream.stat().st_size > 0, timeout_s=60,
                     what="the stand-in's init line in its kept stream")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
    assert proc.returncode == 143, err
    (final,) = kit.final_list(batch)
    assert (final["state"], final["retryable"]) == ("uncontained", False), final["reason"]
    assert final.get("counts", True) is True  # an outcome: resume does not run it again
    assert final["reason"].startswith("uncontained: the session's cgroup still held")
    assert final["reason"].endswith("; the runner stopped (a signal) while the session ran")
    assert not (batch / "sessions" / "present" / PROBE / "r1" / "workspace").exists()
