"""The two errors of the transcript package.

* TranscriptRefused  - the text (or the values) break the contract; carries ``rule``
* TranscriptUnproven - the renderer's output did not read back as its input (a bug)
"""

from __future__ import annotations


class TranscriptRefused(Exception):
    """The transcript breaks the contract; the whole file is refused (RC-16).

    Raised by `parse_transcript` (and so by the check) for any text that is not
    exactly the RC-16 layout over the four closed key sets. A failure to *read*
    the file is not this: the check reports that as "unverified".

    Attributes:
        rule: The contract rule broken, e.g. ``"RC-16"`` (layout, closed sets),
            ``"RC-14"`` (identity), ``"RC-15"`` (event names), ``"RC-12"`` (a
            ``null`` where only absent or a list is a state).
        detail: What was found and where, naming the key or line.
    """

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"{detail} (docs/glossary.md: {rule})")
        self.rule = rule
        self.detail = detail


class TranscriptUnproven(RuntimeError):
    """`write_streamed` wrote text that does not read back as its input.

    A bug in this module, never bad input: input that breaks the contract is
    refused earlier, when its models are built (pydantic ``ValidationError``).
    """

    def __init__(self, detail: str) -> None:
        super().__init__(f"transcript did not read back as written (a bug): {detail}")
        self.detail = detail
