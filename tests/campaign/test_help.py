"""``--help`` teaches: the top level and every subcommand print their help and exit 0.

A ``%`` left unescaped in one subcommand's help (argparse formats help strings
with ``%``) once made the top-level ``--help`` a traceback, while each
subcommand's own help still worked.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from campaign.cli._parser import build_parser


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the parser has no subcommands")


def test_the_top_level_help_lists_every_subcommand() -> None:
    proc = subprocess.run([sys.executable, "-m", "campaign", "--help"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    for name in _subcommands():
        assert name in proc.stdout, name


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_each_subcommands_help_formats(name: str) -> None:
    text = _subcommands()[name].format_help()
    assert text.startswith("usage: ") and name in text.splitlines()[0]


def test_a_commands_module_is_loaded_only_when_it_runs() -> None:
    # A batch does not carry the report's templates and charts (about 4 MiB of the runner's
    # peak here, and a tenth of a second of every start).
    code = ("import sys; from campaign.cli._parser import build_parser; build_parser(); "
            "print(sorted(m for m in ('campaign.report', 'jinja2', 'campaign.cli._report') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.strip() == "[]"
