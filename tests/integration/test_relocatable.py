"""Transcripts are relocatable: one session recorded under two batch directories, same events.

RC-10: the arguments of Read, Write, Edit, MultiEdit and NotebookEdit are
workspace-relative inside the workspace, and so is a Grep's path (``.`` for
the workspace itself), so no path under the batch directory enters an event.
The stand-in harness names every path absolutely, from its working directory,
as the real CLI does; and what its tools print names that directory too (a
Bash ``pwd``, a Grep listing), whose digests are the calls' results. Every
session of a batch runs at the batch's one workspace path (RC-02, blind
sessions), so both batches give byte-identical events, those digests included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaign.corpora import doc, probe_doc, write_files
from tests.integration import kit

pytestmark = [pytest.mark.bwrap]

STANDIN = r'''#!/usr/bin/python3
import json, os, subprocess, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (relocation stand-in)"); sys.exit(0)
ws = os.getcwd()
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
def use(i, name, inp, out=None):
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m" + i,
          "model": "claude-x", "content": [{"type": "tool_use", "id": "t" + i, "name": name,
          "input": inp}]}})
    emit({"type": "user", "parent_tool_use_id": None, "message": {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "t" + i, "content": out or "ok " + i}]}})
emit({"type": "system", "subtype": "init", "cwd": ws, "tools": ["Read"], "mcp_servers": [],
      "model": "claude-x", "permissionMode": "dontAsk", "skills": [], "plugins": [],
      "memory_paths": {}, "claude_code_version": "0.0.0"})
use("1", "Read", {"file_path": ws + "/docs/notes.md"})
use("2", "Grep", {"pattern": "HW-", "path": ws})
use("3", "Grep", {"pattern": "HW-", "path": ws + "/docs"})
use("4", "Glob", {"pattern": "**/*.md", "path": ws})
use("5", "Write", {"file_path": ws + "/out.md", "content": "HW-NOTE-0001\n"})
# What a real tool prints names the working directory: a Bash pwd, a Grep listing.
pwd = subprocess.run(["pwd"], capture_output=True, text=True, check=True).stdout
use("7", "Bash", {"command": "pwd"}, pwd)
use("8", "Grep", {"pattern": "HW-", "path": ws, "output_mode": "files_with_matches"},
    "\n".join(sorted(os.path.join(d, f) for d, _, fs in os.walk(ws) for f in fs)))
use("6", "MultiEdit", {"file_path": ws + "/out.md", "edits": [
    {"old_string": "HW", "new_string": "HW"}]})
with open(ws + "/out.md", "w") as f:
    f.write("see HW-NOTE-0001\n")
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m9",
      "model": "claude-x", "content": [{"type": "text", "text": "done\nyes"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 7, "result": "", "total_cost_usd": 0.01})
'''


def test_one_session_under_two_batch_directories_gives_the_same_events(tmp_path: Path) -> None:
    with kit.host_dir("hw-reloc-") as root:
        corpus = write_files(root / "corpus", {
            ".headwater/probe.yml": "tiers:\n  campaign: {arms: [present], repetitions: 1}\n"
                                    "tools: [Read, Grep, Glob, Write]\nmodel: claude-x\n",
            "docs/probes/p1.md": probe_doc("HW-PRB-0001", "Relocation", answers=["yes"],
                                           examines=["docs/notes.md"], task="Say yes.\n"),
            "docs/notes.md": doc("HW-NOTE-0001", "# Notes\n"),
        })
        harness = root / "harness"
        harness.write_text(STANDIN)
        harness.chmod(0o755)
        events = []
        for name in ("first-batch", "a/much/deeper/second-batch"):
            batch = root / name
            proc = kit.cli("record", "--corpus", str(corpus), "--probe", "HW-PRB-0001", "--arm",
                           "present", "--batch-dir", str(batch), "--harness", str(harness),
                           "--provider", "scripted", "--scripts", str(_scripts(root)),
                           "--network", "host", env=kit.base_env())
            assert proc.returncode == 0, proc.stderr
            (final,) = kit.final_list(batch)
            events.append(final["event"])
            text = (batch / "transcripts" / "present.md").read_text()
            assert str(batch) not in text  # no path under the batch directory
        assert events[0] == events[1]
        arguments = [c["argument"] for c in events[0]["calls"]]
        assert arguments == ["docs/notes.md", "HW- in .", "HW- in docs", "**/*.md", "out.md",
                             "pwd", "HW- in .", "out.md"]
        assert events[0]["produced"][0]["path"] == "out.md"


def _scripts(root: Path) -> Path:
    kit.write_script(root / "scripts", "unused", "no task says this")
    return root / "scripts"
