"""Each command parses into one frozen argument object (`campaign.cli._args`), once.

The rules: every flag a command's parser offers is a field of its class, and
every field without a default is something the parser asks for; a flag not
given runs with the documented default (the one `BatchOptions` records); the
corpus is given once (CORPUS or ``--corpus DIR``) and is required where the
command needs one, said with the command's own usage.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from campaign.batch import BatchOptions
from campaign.cli._args import (
    DEMO_SESSION_TIMEOUT_S,
    DEMO_WATCHDOG_S,
    DemoArgs,
    RecordArgs,
    ReportArgs,
    RunArgs,
    batch_options,
)
from campaign.cli._parser import Command, build_parser, parse_command

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"
CORPUS_DESTS = {"corpus_pos", "corpus_opt"}


def _commands() -> dict[str, argparse.ArgumentParser]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the parser has no subcommands")


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_flag_is_a_field_and_every_required_field_a_flag(name: str) -> None:
    parser = _commands()[name]
    command = parser.get_default("_command")
    assert isinstance(command, Command)
    dests = {a.dest for a in parser._actions if a.dest != "help"}
    fields = {f.name: f for f in dataclasses.fields(command.args)}
    offered = (dests - CORPUS_DESTS) | ({"corpus"} if command.corpus else set())
    assert offered <= set(fields), offered - set(fields)
    required = {n for n, f in fields.items() if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    assert required <= offered, required - offered


def test_a_flag_not_given_runs_with_the_default_the_options_record() -> None:
    args = parse_command(["run", str(EXAMPLE)]).args
    assert isinstance(args, RunArgs)
    built = batch_options(args, corpus=EXAMPLE, tier="campaign", harness_path=Path("/bin/true"),
                          model="m")
    # Only what a run always states; every other option is BatchOptions' own default.
    bare = BatchOptions(command="run", corpus=str(EXAMPLE), tier="campaign", seed=0,
                        harness_path="/bin/true", model="m",
                        workspace_path=f"/workspace/{EXAMPLE.name}")
    assert built == bare


def test_demo_and_record_fix_what_they_do_not_offer() -> None:
    demo = parse_command(["demo"]).args
    assert isinstance(demo, DemoArgs)
    assert (demo.provider, demo.session_timeout_s, demo.watchdog_s, demo.seed) == (
        "scripted", DEMO_SESSION_TIMEOUT_S, DEMO_WATCHDOG_S, 0)
    record = parse_command(["record", str(EXAMPLE), "--probe", "P", "--arm", "present",
                            "--batch-dir", "/var/tmp/x"]).args
    assert isinstance(record, RecordArgs)
    assert record.retries == 0 and record.produced == ()
    options = batch_options(record, corpus=EXAMPLE, tier="campaign", model="m",
                            harness_path=Path("/bin/true"))
    assert (options.command, options.retries) == ("record", 0)


def test_the_arguments_are_frozen_and_hold_tuples() -> None:
    report = parse_command(["report", "a", "b"]).args
    assert isinstance(report, ReportArgs)
    assert report.batches == (Path("a"), Path("b"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.json = True  # type: ignore[misc]
    record = parse_command(["record", "--corpus", str(EXAMPLE), "--probe", "P", "--arm", "x",
                            "--batch-dir", "d", "--produced", "a", "--produced", "b"]).args
    assert isinstance(record, RecordArgs) and record.produced == ("a", "b")


def test_the_corpus_given_both_ways_must_be_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    same = parse_command(["plan", str(EXAMPLE), "--corpus", str(EXAMPLE)]).args
    assert getattr(same, "corpus", None) == EXAMPLE
    with pytest.raises(SystemExit) as stop:
        parse_command(["plan", str(EXAMPLE), "--corpus", "/elsewhere"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "usage: headwater-campaign plan" in err and "give the corpus once" in err


def test_resume_keeps_what_it_was_not_given() -> None:
    args = parse_command(["resume", "B"]).args
    assert dataclasses.asdict(args) == {
        "batch": Path("B"), "corpus": None, "provider_ca": None, "retries": None,
        "max_cost_cents": None, "est_session_cents": None, "max_wall_s": None,
        "hard_wall": None}
