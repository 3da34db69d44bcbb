"""``check-transcript``: the contract check of one file, with three answers.

* ``clean`` (exit 0): the file parses as a transcript under the contract. That is its
  form only (the command says "well-formed"); whether its values match the batch's kept
  streams is the command's ``--batch`` check, which the runner makes, not this one.
* ``refused`` (exit 1): the file breaks the contract (`TranscriptRefused`).
* ``unverified`` (exit 4): the file could not be read (missing, no
  permission, a directory). Never reported as a pass. Bytes that were read
  whole but are not UTF-8, or carry CRLF line endings, are verified broken.

docs/cli.md "Exit statuses": ``check-transcript``: 0 clean, 1 refused, 4
could not verify.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal

from .transcript import TranscriptRefused, read_transcript

__all__ = ["EXIT_STATUS", "CheckResult", "Verdict", "check_transcript_file"]

Verdict = Literal["clean", "refused", "unverified"]

EXIT_STATUS: Final[Mapping[Verdict, int]] = MappingProxyType(
    {"clean": 0, "refused": 1, "unverified": 4}
)
"""Process exit status per verdict (docs/cli.md "Exit statuses")."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The check's answer for one file.

    Attributes:
        verdict: ``clean``, ``refused`` or ``unverified``.
        reasons: Empty when clean; else one line per reason, a refusal as
            ``"<rule>: <detail>"``, an unreadable file as ``"cannot read ..."``.
    """

    verdict: Verdict
    reasons: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """0 clean, 1 refused, 4 unverified."""
        return EXIT_STATUS[self.verdict]


def check_transcript_file(path: Path) -> CheckResult:
    """Check the transcript at ``path`` against the contract (RC-10..RC-16).

    Args:
        path: The transcript file (``transcripts/<arm>.md``).

    Returns:
        ``clean`` when `read_transcript` accepts the file, ``refused`` with
        the rule and detail when it refuses, ``unverified`` when the bytes
        cannot be read (non-UTF-8 or CRLF bytes are ``refused``, RC-16).
        This function raises nothing for those three cases.
    """
    try:
        read_transcript(path)
    except OSError as exc:
        return CheckResult("unverified", [f"cannot read {path}: {exc.strerror or exc}"])
    except TranscriptRefused as exc:
        return CheckResult("refused", [str(exc)])
    return CheckResult("clean", [])
