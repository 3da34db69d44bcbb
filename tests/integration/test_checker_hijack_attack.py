"""A session cannot write the findings checker's verdict by planting a module in its workspace.

The checker (RC-11) runs with the workspace as its working directory, and a Python started
with ``-c`` or ``-m`` puts its working directory first on ``sys.path``. The corpus's checker
here is a shell script that runs ``/usr/bin/python3 -c`` (it imports ``json``, which
Python has not loaded at start-up) and reports ``mentions-retired`` over each file naming
the retired decision HW-DR-0051. The stand-in (through ``record``, real bwrap) writes
``report.md`` naming HW-DR-0051, and ``json.py`` beside it, which exits 0 at import
without a line. Seen without the fix: the check "ran" and found nothing (``report.md``
gets ``findings: []``, a pass; no note), the session's code having run as the checker.

Rule (docs/recorder.md "Findings"): what the session wrote can mislead the checker's
verdict, never run as the checker. The fix (`recorder._findings`): the checker's
environment has ``PYTHONSAFEPATH=1`` (Python 3.11+: neither the working directory nor the
script's directory is put on ``sys.path``). What else a checker runs in the workspace that
reads code or configuration from its working directory is the checker's own concern (git
refuses the workspace: it is the runner's, not the checker's user's).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_record_standins import (
    assert_report_checked,
    record_report_with_checker,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

CHECKER = r"""#!/bin/sh
exec /usr/bin/python3 -c '
import json, os, sys
ws = sys.argv[1]
for root, _, names in os.walk(ws):
    for name in names:
        path = os.path.join(root, name)
        if os.path.isfile(path) and "HW-DR-0051" in open(path, errors="replace").read():
            print(json.dumps({"path": os.path.relpath(path, ws), "rule": "mentions-retired"}))
' "$1"
"""

STANDIN = r'''#!/usr/bin/python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (checker hijack)"); sys.exit(0)
with open("report.md", "w") as f:
    f.write("The current decision is HW-DR-0051.\n")
with open("json.py", "w") as f:
    f.write("import os\nos._exit(0)\n")
os.write(1, STREAM)
'''


def test_a_module_planted_in_the_workspace_does_not_run_as_the_checker(tmp_path: Path,
                                                                       bwrap: str) -> None:
    run, final, produced = record_report_with_checker(
        tmp_path, ".headwater/check.sh", CHECKER, STANDIN)
    assert_report_checked(run, final, produced)
