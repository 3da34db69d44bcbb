"""A session whose tool calls carry huge arguments costs the runner neither time nor memory.

Through ``record``, the real driver under real bwrap (host network: nothing here needs
the provider), a stand-in harness prints, as fast as the pipe takes them:

* a Bash call whose ``command`` is just under the per-call bound
  (`recorder._transform.MAX_CALL_ARGUMENT_CHARS`, 256 Ki characters) and made of
  path-like words (``/a/b ../x`` repeated): RC-08 splits it into shell words and
  resolves every one that looks like a path, so this is the most a kept call asks of
  that scan (a quadratic splitter took 18 s on 1 MB);
* a Bash call of 4 MB, and 8 Grep calls whose patterns are 8 MB each: each over the
  bound, so none is kept and none is scanned;
* a final message and a result line.

Rules (docs/recorder.md "What one call may add"; docs/bench.md): an
argument is kept whole or not at all; one past the bound ends the session
``limit-exceeded`` with a reason naming the call, its line and its size, and that is
what bounds what one session makes the ledger, the transcript and the runner hold, and
the work per line. So ``record`` is done in well under the subprocess's 120 s, by a
runner whose heap is capped (RLIMIT_DATA, as tests/integration/test_memory_cap.py caps
it) at `CAP_BYTES`, no ledger line and no transcript holds more than a few MB, and the
one kept call is the 256 Ki one.

Seen red with ``HW_WEAKEN=no-argument-bound`` (tests/integration/weaken/: both bounds
raised to 1 Gi characters, as if there were none): the runner dies against its cap
(MemoryError; the ledger says ``stopped`` on an error, no final record); without the cap
the session is ``recorded`` with every call kept, its final ledger line and its transcript
71 MB each, in 43 s.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recorder import _transform
from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import PROBE, finals, make_corpus

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

CAP_BYTES = 256 * 1024 * 1024
"""The runner's RLIMIT_DATA: what the heap may grow to while the 8 MB lines pass."""
RECORD_TIMEOUT_S = 120.0
"""A generous bound on the whole ``record``: the lines are parsed and dropped, not scanned."""
MAX_CALL_ARGUMENT_CHARS = 256 * 1024
"""docs/recorder.md's bound on one call's argument (262,144 characters), as written there: the
weakening that raises the runner's must not grow this test's stream."""
FEW_MB = 4 * 1024 * 1024
"""The most one ledger line or a transcript may hold here: the one kept call is 256 Ki."""
WORDS = "/a/b ../x "
KEPT_CHARS = MAX_CALL_ARGUMENT_CHARS - MAX_CALL_ARGUMENT_CHARS % len(WORDS)
"""The kept Bash command: ``/a/b ../x`` repeated, just under the bound."""
BIG_BASH_CHARS = 4 * 1024 * 1024
GREP_CHARS = 8 * 1024 * 1024
GREPS = 8

STANDIN = r'''#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (argument attack)"); sys.exit(0)
WORDS, KEPT, BIG, GREP, GREPS = SIZES


WRITERS


out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Read", "Bash", "Grep"],
     "mcp_servers": [], "model": "claude-test-model", "permissionMode": "dontAsk",
     "skills": [], "plugins": [], "memory_paths": {}, "claude_code_version": "2.1.197"})
call(1, "Bash", {"command": (WORDS * (KEPT // len(WORDS) + 1))[:KEPT]})
call(2, "Bash", {"command": (WORDS * (BIG // len(WORDS) + 1))[:BIG]})
for n in range(GREPS):
    call(3 + n, "Grep", {"pattern": "(a|b)*" * (GREP // 6), "path": "."})
out({"type": "assistant", "parent_tool_use_id": None, "message": {
    "id": "mz", "model": "claude-test-model",
    "content": [{"type": "text", "text": "Found it.\nHW-DR-0052"}]}})
out({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
     "num_turns": 2, "result": "", "total_cost_usd": 0.01})
'''.replace("WRITERS", kit.STANDIN_WRITERS).replace(
    "SIZES", repr((WORDS, KEPT_CHARS, BIG_BASH_CHARS, GREP_CHARS, GREPS)))


LOOP_STANDIN = r'''#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (link loop attack)"); sys.exit(0)
bottom = "/".join(["D"] + ["d"] * 61)
os.makedirs(bottom)
os.symlink("n", bottom + "/n")  # the bottom links to itself
os.symlink(bottom + "/n", "a")


WRITERS


out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Read", "Bash"],
     "mcp_servers": [], "model": "claude-test-model", "permissionMode": "dontAsk",
     "skills": [], "plugins": [], "memory_paths": {}, "claude_code_version": "2.1.197"})
call(1, "Bash", {"command": " ".join(["x/../a"] * WORDS)})
for n in range(READS):  # each resolved again after the session, for its result
    call(2 + n, "Read", {"file_path": "a/%d" % n})
out({"type": "assistant", "parent_tool_use_id": None, "message": {
    "id": "mz", "model": "claude-test-model",
    "content": [{"type": "text", "text": "Found it.\nHW-DR-0052"}]}})
out({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
     "num_turns": 2, "result": "", "total_cost_usd": 0.01})
'''.replace("WRITERS", kit.STANDIN_WRITERS)
LOOP_WORDS = MAX_CALL_ARGUMENT_CHARS // len("x/../a ")
"""Short words naming the link loop, as many as one kept call holds: ~2,600 lstats each."""
LOOP_READS = 2000


def capped_record(corpus: Path, batch: Path, harness: Path,
                  *args: str) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (CAP_BYTES, CAP_BYTES))

    env = {**kit.base_env(), "HW_STANDIN_KEY": "sk-standin-not-a-secret"}
    return subprocess.run(
        [sys.executable, "-m", "campaign", "record", "--corpus", str(corpus), "--probe", PROBE,
         "--arm", "present", "--batch-dir", str(batch), "--harness", str(harness),
         "--provider-url", "http://127.0.0.1:9", "--api-key-env", "HW_STANDIN_KEY",
         "--network", "host", "--workspace-path", "/ws", *args],
        capture_output=True, text=True, env=env, timeout=RECORD_TIMEOUT_S, check=False,
        cwd=kit.REPO, preexec_fn=cap)  # fmt: skip


def test_huge_arguments_end_the_session_limit_exceeded_promptly_and_are_never_kept(
        tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(STANDIN)
    harness.chmod(0o755)
    batch = tmp_path / "b"
    started = time.monotonic()
    try:
        run = capped_record(corpus, batch, harness)
        elapsed = time.monotonic() - started
        recorded = finals(batch)
        assert recorded, (batch / "ledger.jsonl").read_text()[-1000:]  # a runner that died: none
        final = recorded[-1]
        assert run.returncode == 1, run.stdout + run.stderr[-3000:]
        assert final["state"] == "limit-exceeded", final["reason"]
        assert (f"the Bash call on stdout line 4 has an argument of {BIG_BASH_CHARS} characters, "
                f"over the {MAX_CALL_ARGUMENT_CHARS} one call may add") in final["reason"]
        # The kept call is the one under the bound, whole; the oversized ones are not kept.
        assert [(c["tool"], len(c["argument"])) for c in final["calls"]] == [("Bash", KEPT_CHARS)]
        assert final["stream_bytes"] > BIG_BASH_CHARS + GREPS * GREP_CHARS  # all of it was read
        for raw in (batch / "ledger.jsonl").read_bytes().splitlines():
            assert len(raw) < FEW_MB, json.loads(raw)["kind"]
        for transcript in (batch / "transcripts").iterdir():
            assert transcript.stat().st_size < FEW_MB, transcript
        assert elapsed < RECORD_TIMEOUT_S / 2, f"record took {elapsed:.1f} s"
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()


def test_the_kept_command_is_under_the_bound_and_made_of_path_words() -> None:
    assert _transform.MAX_CALL_ARGUMENT_CHARS == MAX_CALL_ARGUMENT_CHARS
    assert MAX_CALL_ARGUMENT_CHARS - len(WORDS) < KEPT_CHARS <= MAX_CALL_ARGUMENT_CHARS
    assert BIG_BASH_CHARS > MAX_CALL_ARGUMENT_CHARS and GREP_CHARS > MAX_CALL_ARGUMENT_CHARS
    assert os.path.isabs(WORDS.split()[0]) and ".." in WORDS.split()[1]


def test_path_words_naming_a_deep_link_loop_end_the_session_limit_exceeded_promptly(
        tmp_path: Path, bwrap: str) -> None:
    """RC-08 resolves each path word, following the workspace's symlinks, on the runner's
    event loop while the session runs, and each Read's path again after it. The stand-in
    makes ``a`` a link 62 directories down to a link to itself, then prints one Bash
    command of 37,449 words ``x/../a`` (under the argument bound) and 2,000 Reads of
    ``a/<n>``: 41 walks of 63 lstats per word. Rule (recorder/_paths.py, 4): one session's
    paths cost at most `recorder._paths.MAX_PATH_LOOKUPS` lookups; the session ends
    ``limit-exceeded`` naming them, the Reads past the budget keep their tool_result
    digests, and ``record`` is done in seconds, its ``--session-timeout 20`` never
    outlived.

    Seen red with the budget raised past reach (``MAX_PATH_LOOKUPS`` = 10**11): ``record``
    is still scanning the one command when the subprocess's 120 s run out (a probe with
    3,000 words: a session with ``--session-timeout 5`` lasted 41 s, and a writer it
    forked meanwhile put 600 MB in its workspace past ``--max-writes 16M``: the runner
    measures writes on the loop the scan holds).
    """
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(LOOP_STANDIN.replace("WORDS", str(LOOP_WORDS), 1)
                       .replace("READS", str(LOOP_READS), 1))  # fmt: skip
    harness.chmod(0o755)
    batch = tmp_path / "b"
    started = time.monotonic()
    try:
        run = capped_record(corpus, batch, harness, "--session-timeout", "20")
        elapsed = time.monotonic() - started
        recorded = finals(batch)
        assert recorded, (batch / "ledger.jsonl").read_text()[-1000:]
        final = recorded[-1]
        assert run.returncode == 1, run.stdout + run.stderr[-3000:]
        assert final["state"] == "limit-exceeded", final["reason"]
        assert ("by the Bash call on stdout line 2 the calls' paths took 100000 file lookups"
                in final["reason"]), final["reason"]
        reads = [c for c in final["calls"] if c["tool"] == "Read"]
        assert len(reads) == LOOP_READS and all(c["result"] == reads[0]["result"] for c in reads)
        assert elapsed < 40, f"record took {elapsed:.1f} s"
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()


CALLS_STANDIN = r'''#!/usr/bin/python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (many calls, one long message)"); sys.exit(0)
def out(b):
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
out(b'{"type":"system","subtype":"init","cwd":"/ws","tools":["Bash"],"mcp_servers":[],'
    b'"model":"claude-test-model","permissionMode":"dontAsk","skills":[],"plugins":[],'
    b'"memory_paths":{},"claude_code_version":"2.1.197"}\n')
head = b'{"type":"assistant","parent_tool_use_id":null,"message":{"id":"same",'
head += b'"model":"claude-test-model","content":['
block = b'{"type":"tool_use","name":"X","input":{}}'
for _ in range(CALL_LINES):  # 10,000 calls of two characters a line
    out(head + b",".join([block] * 10000) + b']}}\n')
text = b'{"type":"text","text":"' + b"x" * (16 << 20) + b'"}'
for _ in range(TEXT_LINES):  # the same message id: one message of 16 MB a line
    out(head + text + b']}}\n')
out(head + b'{"type":"text","text":"\\nHW-DR-0052"}]}}\n')
out(b'{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
    b'"num_turns":1,"result":"","total_cost_usd":0.01}\n')
'''


@pytest.mark.parametrize(("calls", "texts", "expected"), [
    (100, 0, "past the 10000 calls and results one session may add to the record"),
    (0, 40, "over the 4194304 one message may hold"),
])
def test_many_small_calls_or_one_long_message_end_the_session_and_are_not_kept(
        tmp_path: Path, bwrap: str, calls: int, texts: int, expected: str) -> None:
    """What a session makes the runner keep is bounded in count and in text, not only per
    argument: a million calls of two characters (100 lines of 10,000 tool_use blocks) or
    forty 16 MB lines of one message id (a final text of 671 MB from a stream that compresses
    to 29 KB). Rules (docs/recorder.md): at most `MAX_SESSION_CALLS` calls and orphan
    results, and `MAX_MESSAGE_CHARS` of one message's text; past them ``limit-exceeded``,
    nothing more kept, and the runner under its heap cap finishes in seconds.

    Seen red without the bounds (both raised to 2**40): the runner held 4.1 GB for the
    calls (five minutes, 29 MB ledger line) and 2 GB for the message (a 671 MB final.txt)
    without a cap; under this test's 256 MiB cap it dies (MemoryError, no final record).
    """
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(CALLS_STANDIN.replace("CALL_LINES", str(calls))
                       .replace("TEXT_LINES", str(texts)))  # fmt: skip
    harness.chmod(0o755)
    batch = tmp_path / "b"
    started = time.monotonic()
    try:
        run = capped_record(corpus, batch, harness)
        elapsed = time.monotonic() - started
        recorded = finals(batch)
        assert recorded, (batch / "ledger.jsonl").read_text()[-1000:]
        final = recorded[-1]
        assert final["state"] == "limit-exceeded", final["reason"]
        assert expected in final["reason"], final["reason"]
        assert run.returncode == 1, run.stdout + run.stderr[-3000:]
        for raw in (batch / "ledger.jsonl").read_bytes().splitlines():
            assert len(raw) < FEW_MB, json.loads(raw)["kind"]
        for kept in (batch / "sessions").rglob("*"):
            assert kept.is_dir() or kept.stat().st_size < 5 * FEW_MB, kept
        assert elapsed < RECORD_TIMEOUT_S / 2, f"record took {elapsed:.1f} s"
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
