"""A session cannot turn its findings into "not checked" by what it leaves in its workspace.

The findings checker (RC-11) runs over the workspace after the session, which keeps the
symlinks, FIFOs and sockets the session left (`sandbox.storage._reclaim` re-owns them). The
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

from tests.integration.test_record_standins import (
    CHECKER,
    assert_report_checked,
    record_report_with_checker,
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
    run, final, produced = record_report_with_checker(
        tmp_path, ".headwater/check.py", CHECKER, STANDIN)
    assert_report_checked(run, final, produced)
