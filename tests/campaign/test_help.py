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


def _option_help(command: str, option: str) -> str:
    parser = _subcommands()[command]
    for action in parser._actions:
        if option in action.option_strings:
            return " ".join((action.help or "").split())
    raise AssertionError(f"{command} has no {option}")


@pytest.mark.parametrize("command", ["run", "demo", "record"])
def test_network_help_says_what_each_value_lets_a_session_reach(command: str) -> None:
    # With the provider gateway, a confined session's one allowed target is its own
    # gateway (never the provider), and a host-network session can reach the provider
    # but holds no credential for it.
    text = _option_help(command, "--network")
    assert "provider gateway" in text
    assert "confined:" in text and "host:" in text
    assert "no credential" in text


@pytest.mark.parametrize("command", ["run", "demo", "resume"])
def test_max_cost_cents_help_says_where_the_spend_comes_from(command: str) -> None:
    text = _option_help(command, "--max-cost-cents")
    assert "US cents" in text
    assert "provider's own token usage" in text and "price table" in text
    assert "budget-stopped" in text
