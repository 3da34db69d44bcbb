"""After a session the runner reads its files beneath the workspace only: an attack from inside.

A stand-in harness (one self-contained file, run under real bwrap as a
session) plants what a hostile session would: an artifact that is a symlink
to a root-only host file, a directory symlink on the way to another, a FIFO,
and a sparse file of 8 TiB, names them all as written, and prints a valid
stream. The runner must read none of them (no digest of the host file, no
cites from it, no hang, no terabytes read), keep their paths only, and list
each with why in the ledger and the prose.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from recorder._beneath import MAX_ARTIFACT_BYTES
from tests.campaign.corpora import doc, probe_doc, write_files
from tests.integration import kit

pytestmark = [pytest.mark.bwrap]

STANDIN = r'''#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (post-session reads attack)"); sys.exit(0)
ws = os.getcwd()
os.symlink(SECRET, "out.md")
os.makedirs("real"); open("real/page.md", "w").write("HW-DOC-0001\n")
os.symlink("real", "via")
os.mkfifo("pipe.md")
with open("big.bin", "wb") as f:
    f.truncate(8 * 1024 ** 4)
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": ws, "tools": ["Write"], "mcp_servers": [],
      "model": "m", "permissionMode": "dontAsk", "skills": [], "plugins": [],
      "memory_paths": {}, "claude_code_version": "0.0.0"})
for i, name in enumerate(["out.md", "via/page.md", "pipe.md", "big.bin", "real/page.md"]):
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m%d" % i,
          "model": "m", "content": [{"type": "tool_use", "id": "t%d" % i, "name": "Write",
          "input": {"file_path": ws + "/" + name, "content": "x"}}]}})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "mz", "model": "m",
      "content": [{"type": "text", "text": "done\nyes"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 6, "result": "", "total_cost_usd": 0.01})
'''


def test_a_session_cannot_make_the_runner_read_past_its_workspace_or_its_size_cap() -> None:
    with kit.host_dir("hw-reads-") as root:
        secret = root / "secret"
        secret.write_text("HW-DOC-0001 root only\n")
        secret.chmod(0o600)
        corpus = write_files(root / "corpus", {
            ".headwater/probe.yml": "tiers:\n  campaign: {arms: [present], repetitions: 1}\n"
                                    "tools: [Write]\nmodel: m\n",
            "docs/probes/p1.md": probe_doc("HW-PRB-0001", "Reads", answers=["yes"],
                                           task="Say yes.\n"),
            "docs/page.md": doc("HW-DOC-0001", "# Page\n"),
        })
        harness = root / "harness"
        harness.write_text(STANDIN.replace("SECRET", repr(str(secret))))
        harness.chmod(0o755)
        kit.write_script(root / "scripts", "unused", "no task says this")
        batch = root / "batch"
        started = time.monotonic()
        proc = kit.cli("record", "--corpus", str(corpus), "--probe", "HW-PRB-0001", "--arm",
                       "present", "--batch-dir", str(batch), "--harness", str(harness),
                       "--provider", "scripted", "--scripts", str(root / "scripts"),
                       "--network", "host", env=kit.base_env())
        took = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr
        assert took < 60  # not 8 TiB read, no FIFO waited on
        (final,) = kit.final_list(batch)
        produced = {a["path"]: a for a in final["event"]["produced"]}
        assert produced["out.md"] == {"path": "out.md"}
        assert produced["via/page.md"] == {"path": "via/page.md"}
        assert produced["pipe.md"] == {"path": "pipe.md"}
        assert produced["big.bin"] == {"path": "big.bin"}
        assert produced["real/page.md"]["cites"] == ["HW-DOC-0001"]  # the honest one is read
        unread = {u["path"]: u for u in final["unread_artifacts"]}
        assert unread["out.md"]["reason"].startswith("a symlink")
        assert unread["via/page.md"]["reason"].startswith("a symlink")
        # A FIFO is not kept in the batch (the copy out of the session's store skips it),
        # and the attempt's reason says so; nothing of it is read.
        assert "pipe.md" not in unread
        assert '"pipe.md" (fifo)' in final["reason"], final["reason"]
        assert unread["big.bin"]["size_bytes"] == 8 * 1024**4
        assert f"over the {MAX_ARTIFACT_BYTES}" in unread["big.bin"]["reason"]
        secret_digest = "sha256:" + hashlib.sha256(secret.read_bytes()).hexdigest()
        ledger = (batch / "ledger.jsonl").read_text()
        text = (batch / "transcripts" / "present.md").read_text()
        assert secret_digest not in ledger and secret_digest not in text
        assert 'the produced file "big.bin" was not read after the session' in text
        assert 'the produced file "out.md" was not read' in text


MANY_NAMES = r'''#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (one sparse file, many names)"); sys.exit(0)
ws = os.getcwd()
with open("f0", "wb") as f:
    f.truncate(SIZE)  # just under the cap on one read, none of it allocated
for n in range(1, NAMES):
    os.link("f0", "f%d" % n)
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": ws, "tools": ["Write"], "mcp_servers": [],
      "model": "m", "permissionMode": "dontAsk", "skills": [], "plugins": [],
      "memory_paths": {}, "claude_code_version": "0.0.0"})
for n in range(NAMES):
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m%d" % n,
          "model": "m", "content": [{"type": "tool_use", "id": "t%d" % n, "name": "Write",
          "input": {"file_path": "f%d" % n, "content": "x"}}]}})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "mz", "model": "m",
      "content": [{"type": "text", "text": "done\nyes"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 6, "result": "", "total_cost_usd": 0.01})
'''
NAMES = 600


def test_one_file_under_many_names_costs_the_runner_its_read_budget_not_a_read_per_name(
        ) -> None:
    """A sparse file of 64 MiB (the cap on one read) under 600 names, each named by a Write:
    every name is a produced file, each under the cap. Rule (docs/recorder.md): one
    session's reads after it take at most `MAX_SESSION_READ_BYTES` (1 GiB: 16 of them);
    the rest keep their paths, listed unread past that budget, and ``record`` is done in
    seconds. Seen red without the budget: 600 reads and hashes of 64 MiB, 69 s (a session
    can name such a file a hundred thousand times: hours of a core after it)."""
    with kit.host_dir("hw-reads-") as root:
        corpus = write_files(root / "corpus", {
            ".headwater/probe.yml": "tiers:\n  campaign: {arms: [present], repetitions: 1}\n"
                                    "tools: [Write]\nmodel: m\n",
            "docs/probes/p1.md": probe_doc("HW-PRB-0001", "Reads", answers=["yes"],
                                           task="Say yes.\n"),
            "docs/page.md": doc("HW-DOC-0001", "# Page\n"),
        })  # fmt: skip
        harness = root / "harness"
        harness.write_text(MANY_NAMES.replace("SIZE", str(MAX_ARTIFACT_BYTES))
                           .replace("NAMES", str(NAMES)))  # fmt: skip
        harness.chmod(0o755)
        kit.write_script(root / "scripts", "unused", "no task says this")
        batch = root / "batch"
        started = time.monotonic()
        proc = kit.cli("record", "--corpus", str(corpus), "--probe", "HW-PRB-0001", "--arm",
                       "present", "--batch-dir", str(batch), "--harness", str(harness),
                       "--provider", "scripted", "--scripts", str(root / "scripts"),
                       "--network", "host", env=kit.base_env())  # fmt: skip
        took = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr
        (final,) = kit.final_list(batch)
        produced = final["event"]["produced"]
        assert len(produced) == NAMES
        assert sum("result" in a for a in produced) == 16  # 1 GiB of 64 MiB reads
        reasons = {u["reason"] for u in final["unread_artifacts"]}
        assert reasons == {f"{MAX_ARTIFACT_BYTES} bytes, past the {1 << 30} read after a "
                           "session in all"}, reasons
        assert took < 30, f"record took {took:.1f} s"
