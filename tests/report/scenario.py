"""The hand-built batch most figure tests read: two probes, two arms, twelve repetitions.

Present answers probe P mostly "alpha" (one session needs a retry, one
times out, one is refused at init); absent mostly "beta". Probe Q is
answered "42" throughout, with one session whose calls were not watched and
one whose event has no answer key. The arms are interleaved in time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.report.batches import HandBatch, grep, read

if TYPE_CHECKING:
    from pathlib import Path

P, Q = "HW-PRB-0001", "HW-PRB-0002"
PROBES = {P: (["alpha", "beta"], ["docs/a.md", "docs/b.md"]), Q: (["42"], ["docs/c.md"])}
THIRD = "0.0033333"
"""A cost whose sum of 12 is 3.99996 cents: one ceiling after the sum gives 4, not 12."""

# present, probe P: (answer, calls) of each recorded session s1..s9; s10 is recorded on its
# second attempt; s11 timed out (retryable, cost unknown); s12 was refused at init.
PRESENT_P: list[tuple[str | None, list[dict[str, str]]]] = [
    ("alpha", [read("docs/a.md"), grep("x")]),
    ("alpha", [read("docs/a.md"), grep("x"), grep("y")]),
    ("alpha", [read("docs/a.md"), read("docs/b.md"), grep("y")]),
    ("alpha", [read("docs/a.md"), grep("x"), grep("y"), grep("z")]),
    ("alpha", [read("docs/a.md")] + [grep("x")] * 4),
    ("alpha", [read("./docs/b.md"), grep("q")]),  # not the examined path, word for word
    ("alpha", [read("docs/b.md")] * 2 + [grep("x")] * 6),
    ("beta", [grep("x")]),
    (None, [grep("x")] * 9),
]
PRESENT_P10 = ("alpha", [read("docs/a.md")] * 3)
ABSENT_P = ["alpha"] * 3 + ["beta"] * 6 + [None] * 3


def at(i: int, arm: str) -> float:
    """Arms interleaved in time, ten seconds a session."""
    return 20.0 * i + (10.0 if arm == "absent" else 0.0)


def scenario_batch(root: Path) -> Path:
    """Write the batch under ``root``; its path."""
    b = HandBatch(root, PROBES, repetitions=12)
    for rep, (answer, calls) in enumerate(PRESENT_P, start=1):
        b.attempt("present", P, rep, answer=answer, calls=calls, cost=THIRD,
                  outside=2 if rep == 1 else 0, at=at(rep, "present"))
    b.attempt("present", P, 10, state="harness-error", retryable=True, cost=THIRD,
              at=at(10, "present"))
    b.attempt("present", P, 10, attempt=2, answer=PRESENT_P10[0], calls=PRESENT_P10[1],
              cost=THIRD, at=at(10, "present") + 5)
    b.attempt("present", P, 11, state="timed-out", retryable=True, cost=None, known=False,
              at=at(11, "present"))
    b.attempt("present", P, 12, state="refused-init", cost=THIRD, outside=1,
              at=at(12, "present"))
    for rep, answer in enumerate(ABSENT_P, start=1):
        b.attempt("absent", P, rep, answer=answer, calls=[grep("x")] * rep, cost="0.01",
                  at=at(rep, "absent"))
    for rep in range(1, 13):
        b.attempt("present", Q, rep, answer="42", calls=[read("docs/c.md")], cost="0.01",
                  at=at(rep, "present") + 1)
        if rep <= 10:
            b.attempt("absent", Q, rep, answer="42", calls=[], cost="0.01",
                      at=at(rep, "absent") + 1)
    b.attempt("absent", Q, 11, answer=None, calls=None, cost="0.01", at=at(11, "absent") + 1)
    b.attempt("absent", Q, 12, answer_key=False, calls=[], cost="0.01", at=at(12, "absent") + 1)
    b.stop(reason="done", outstanding=1)
    return b.close()
