"""The runner never runs a harness outside the sandbox, and bounds what it captures of one.

Attack: a stand-in harness that, for any argument, tries to leave a mark on
the host (a file at a host path that no sandbox mounts) and prints 100 MB. If
the runner ran it on the host (as it once did for ``--version``, as root), the
mark would be there; the version it recorded must come from inside the
sandbox, and only a bounded first line of it.
"""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from tests.campaign.corpora import probe_doc, write_files
from tests.integration import kit
from tests.standin import STANDIN_PYTHON

pytestmark = [pytest.mark.bwrap]

STANDIN = """#!{python}
import os, sys
try:
    with open({mark!r}, "w") as f:
        f.write("ran on the host as uid %d" % os.getuid())
except OSError:
    pass
if sys.argv[1:] == ["--version"]:
    sys.stdout.write("9.9.9 (stand-in)\\n" + "v" * 100_000_000 + "\\n")
    sys.exit(0)
sys.exit(3)
"""


def test_the_harness_version_is_measured_inside_the_sandbox_and_bounded() -> None:
    with kit.host_dir("hw-onhost-") as root:
        mark = root / "ran-on-host"
        harness = root / "harness"
        harness.write_text(STANDIN.format(python=STANDIN_PYTHON, mark=str(mark)))
        harness.chmod(0o755)
        corpus = write_files(root / "corpus", {
            ".headwater/probe.yml": "tiers:\n  campaign: {arms: [present], repetitions: 1}\n"
                                    "tools: [Read]\nmodel: m\n",
            "docs/probes/p1.md": probe_doc("HW-PRB-0001", "P", task="Go.\n"),
        })
        kit.write_script(root / "scripts", "unused", "no task says this")
        batch = root / "batch"
        proc = kit.cli("record", "--corpus", str(corpus), "--probe", "HW-PRB-0001", "--arm",
                       "present", "--batch-dir", str(batch), "--harness", str(harness),
                       "--provider", "scripted", "--scripts", str(root / "scripts"),
                       "--network", "host", env=kit.base_env())
        assert proc.returncode == 12, proc.stderr  # no init line: refused-init
        assert not mark.exists(), mark.read_text()
        config = YAML(typ="safe").load((batch / "config.yaml").read_text())
        assert config["facts"]["harness_version"] == "9.9.9 (stand-in)"  # its first line
