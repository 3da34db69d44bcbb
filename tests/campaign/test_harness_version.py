"""config.yaml's harness version: the first line of ``--version``, bounded."""

from __future__ import annotations

from campaign.batch._harness import HARNESS_VERSION_CHARS, bounded_version


def test_the_pinned_clis_answer_is_kept_as_printed() -> None:
    assert bounded_version("2.1.197 (Claude Code)\n") == "2.1.197 (Claude Code)"


def test_a_harness_that_prints_a_stream_keeps_one_bounded_line() -> None:
    """A stand-in that ignores --version printed a 70 MB stream into config.yaml."""
    assert bounded_version("first\n" + "a" * 5_000_000 + "\n") == "first [cut]"
    assert bounded_version("b" * 5000 + "\n") == "b" * HARNESS_VERSION_CHARS + " [cut]"


def test_a_harness_that_prints_nothing_is_unknown() -> None:
    assert bounded_version("") == "unknown (nothing printed)"
