"""A session cannot turn its findings into "not checked" by leaving a symlink in its workspace.

red: hole open. The findings checker (RC-11) runs over the workspace after the session,
which keeps the symlinks, FIFOs and sockets the session left (`sandbox._reclaim` re-owns
them). The stand-in (through ``record``, real bwrap) writes ``report.md`` naming the retired
decision HW-DR-0051, which the suite's own checker (`test_record_standins.CHECKER`: it opens
every file ``os.walk`` lists) reports as ``mentions-retired``, and beside it a symlink to
itself (``loop.md``). The checker's ``open`` of ``loop.md`` raises (ELOOP), it exits 1, and
no artifact of the session gets ``findings``: ``findings_note`` says the check failed. The
note is visible (a failed check is never a pass, RC-12), but the verdict the corpus owner
asked for is gone, at the session's choice, with one system call; a FIFO does the same in
the checker's 120 s watchdog, a symlink to ``/dev/zero`` through its memory limit.

Rule wanted: what the checker is given is what the session produced: regular files and
directories. Fix proposed: give the checker a workspace of regular files and directories
only (the runner drops, before the check, the symlinks, FIFOs and sockets the session left,
as it does for ``log/``; a produced path that is one of those has no digest and no findings
today either), or say in docs/recorder.md that a checker must skip what is not a regular
file (``os.walk`` lists a dangling symlink among the files).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import (
    ANSWERED,
    CHECKER,
    READ,
    finals,
    init,
    make_corpus,
    record,
    result,
    tool_result,
    tool_use,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

STANDIN = r'''#!/usr/bin/python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (checker evasion)"); sys.exit(0)
with open("report.md", "w") as f:
    f.write("The current decision is HW-DR-0051.\n")
os.symlink("loop.md", "loop.md")
os.write(1, STREAM)
'''


def test_a_symlink_left_in_the_workspace_does_not_undo_the_check(tmp_path: Path,
                                                                 bwrap: str) -> None:
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", checker=".headwater/check.py",
                         extra={".headwater/check.py": CHECKER})  # fmt: skip
    (corpus / ".headwater" / "check.py").chmod(0o755)
    stream = (init() + READ
              + tool_use("w", "Write", {"file_path": "report.md", "content": "x"}, msg="m3")
              + tool_result("w", "File created") + ANSWERED + result())  # fmt: skip
    harness = tmp_path / "claude"
    harness.write_text(STANDIN.replace("STREAM", repr(stream)))
    harness.chmod(0o755)
    try:
        run = record(corpus, batch, harness, "--post-result-grace", "2")
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        assert final["state"] == "recorded", final["reason"]
        produced = {a["path"]: a for a in final["event"]["produced"]}
        assert "findings_note" not in final, final["findings_note"]
        assert produced["report.md"].get("findings") == ["mentions-retired"], produced
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
