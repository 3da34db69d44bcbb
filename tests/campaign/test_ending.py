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


def test_a_batch_on_a_release_the_census_does_not_cover_ends_with_a_warning() -> None:
    import io

    from rich.console import Console

    from campaign.cli._ending import print_harness_warning
    from recorder import PINNED_RELEASE

    err = Console(file=io.StringIO(), width=300, color_system=None)
    print_harness_warning(err, ((PINNED_RELEASE, 3),))
    assert isinstance(err.file, io.StringIO)
    assert err.file.getvalue() == ""  # the pin is covered: nothing to say
    print_harness_warning(err, ((PINNED_RELEASE, 3), ("2.1.310", 2), ("2.1.3\n10", 1)))
    text = err.file.getvalue()
    assert text.startswith("warning: Claude Code not covered by the harness census: 2.1.310 "
                           "(2 attempts)")
    assert "not a release number" in text  # the forged one, on the same line
    assert text.count("\n") == 1


def test_a_login_the_gateway_could_not_use_ends_with_how_to_log_in_again() -> None:
    import io

    from rich.console import Console

    from campaign.cli._ending import print_login_failure

    err = Console(file=io.StringIO(), width=400, color_system=None)
    print_login_failure(err, 2, "the host's login expired\nat noon")
    assert isinstance(err.file, io.StringIO)
    text = err.file.getvalue()
    assert text.startswith("warning: 2 sessions ended harness-error because the provider "
                           "gateway could not use the host's login (the host's login expired")
    assert "not retried" in text and "log in again" in text and "--api-key-env" in text
    assert text.count("\n") == 1  # the gateway's words made one line
