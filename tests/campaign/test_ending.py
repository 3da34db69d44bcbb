"""The batch's ending prints the report's summary; a summary that cannot be built is said,
never raised: the batch is recorded by then, so the invocation's exit status stands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from campaign.cli._ending import print_verdict

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_a_summary_that_cannot_be_built_is_said_not_raised(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    print_verdict(tmp_path)  # a directory that is not a batch: the report refuses it
    out = capsys.readouterr().out
    assert out.startswith("\nthe summary could not be built (")
    assert out.endswith(f"the batch is recorded: headwater-campaign report {tmp_path}\n")
