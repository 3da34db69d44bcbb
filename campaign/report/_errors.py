"""Errors raised by the report (exit status 2: bad input, docs/cli.md).

* ReportError            - base class (a `campaign._errors.CampaignError`, so exit 2)
  x NotABatch            - a directory that is not a readable batch
  x BatchesDiffer        - batches whose plans or arms differ, asked to be merged
  x SameBatchTwice       - one batch named twice (its sessions would count twice)

Each message names the batch and what is wrong, in words; the same facts are
kept as attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from campaign._errors import CampaignError

if TYPE_CHECKING:
    from pathlib import Path


class ReportError(CampaignError):
    """Base class of the report's errors; the CLI exits 2."""


class NotABatch(ReportError):
    """``path`` is not a batch the report can read: its plan, config or ledger is missing or
    unreadable (a batch is read, never repaired)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path} is not a batch the report can read: {problem}; give a batch "
                         "directory made by run, demo or record")
        self.path = path
        self.problem = problem


class BatchesDiffer(ReportError):
    """Two batches asked to be merged differ in a plan member or in their arms.

    Attributes:
        member: ``tree``, ``lock``, ``selection``, ``read_set``, ``seed``, ``harness``,
            ``arms`` or ``model``. first, second: the two batches. was, now: the two
            values, as text.
    """

    def __init__(self, member: str, first: Path, second: Path, was: str, now: str) -> None:
        super().__init__(
            f"batches {first} and {second} differ in {member} ({was} against {now}), so their "
            "sessions did not measure the same thing and are not merged; pass --side-by-side to "
            "show each batch in columns of its own")
        self.member = member
        self.first = first
        self.second = second
        self.was = was
        self.now = now


class SameBatchTwice(ReportError):
    """One batch directory was named more than once."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"batch {path} is named more than once; its sessions would count twice")
        self.path = path
