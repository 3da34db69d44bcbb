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

from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import (
    ANSWERED,
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
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", checker=".headwater/check.sh",
                         extra={".headwater/check.sh": CHECKER})  # fmt: skip
    (corpus / ".headwater" / "check.sh").chmod(0o755)
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
