"""A session cannot turn its findings into "not checked" by what it leaves in its workspace.

The findings checker (RC-11) runs over the workspace after the session, which keeps the
symlinks, FIFOs and sockets the session left (`sandbox._reclaim` re-owns them). The
stand-in (through ``record``, real bwrap) writes ``report.md`` naming the retired decision
HW-DR-0051, which the suite's own checker (`test_record_standins.CHECKER`) reports as
``mentions-retired``, and beside it a symlink to itself (``loop.md``) and a FIFO
(``pipe.md``).

Rule (docs/recorder.md "Findings", "Its input"): the checker is given the workspace as the
session left it, and a checker must open regular files only (``O_NOFOLLOW | O_NONBLOCK``,
then ``fstat``); one that does cannot be made to fail by the session, and ``report.md`` keeps
its finding. A checker that opens whatever ``os.walk`` lists fails at the session's choice
(visibly: ``findings_note``; a failed check is never a pass, RC-12).

Seen red with the suite's checker as it was (a plain ``open`` of every listed file): the
``open`` of ``loop.md`` raises ELOOP, it exits 1, and no artifact gets ``findings``.
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
os.mkfifo("pipe.md")
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
