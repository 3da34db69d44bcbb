"""The ``grade`` command's text, for people: figures per probe, probes pooled, then verdicts.

Every string a transcript carries (probe ids, session names, answers, call arguments,
produced paths) goes through `campaign._terminal_text.one_line`, so it can be read on a
terminal and never obeyed. Layout (docs/grading.md, "The grade command"):

1. a head: the batches, the corpus, the grader's version, the reference arm, and (when the
   read set moved) the sentence that says so and what it means;
2. per graded probe: its expectations, one row per arm (satisfied k/n, the share and its
   Wilson 95% interval, not observed and the sessions apart, each counted apart), one row
   per other arm (the difference from the reference in points, Newcombe's 95% interval,
   Fisher's p, win, loss or tie);
3. across probes: per other arm, the Mantel-Haenszel common odds ratio with its
   Robins-Breslow-Greenland 95% interval, and wins, losses and ties;
4. the probes that declare no expectations (ungraded);
5. every session's verdict, naming its event, and each expectation's verdict with the call
   or artifact that decided it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from campaign._terminal_text import one_line
from campaign.stats import SIGNIFICANCE

from ._model import MOVED_READ_SET

if TYPE_CHECKING:
    from campaign.expect import Expectations
    from campaign.stats import CommonOddsRatio, Interval, WinsLossesTies

    from ._compare import Difference, Figures, Share
    from ._model import ExpectationVerdict, Grading, SessionGrade

MOVED_SENTENCE: Final = (
    f"Verdicts {MOVED_READ_SET}: the corpus's read set (the probe files and the files they "
    "examine) differs from the one the batch recorded, so each verdict grades what the "
    "session did against the expectations the corpus declares now, which may not be the "
    "ones it ran under.")
"""The one sentence every output carries when the read set moved."""


def grade_text(grading: Grading, figures: Figures) -> str:
    """The whole text of ``grade`` for ``grading`` and its ``figures`` (module docstring)."""
    lines = _head(grading, figures)
    for probe in figures.probes:
        expected = _expected(grading.expectations[probe.probe])
        lines += ["", f"{one_line(probe.probe)}: expects {expected}"]
        lines += [_share_row(s) for s in probe.shares]
        lines += [_difference_row(d, figures.reference) for d in probe.differences]
    if figures.pooled and figures.probes:
        lines += ["", f"across {len(figures.probes)} graded probes (probes as strata):"]
        lines += [f"  {p.arm} against {figures.reference}: Mantel-Haenszel common odds ratio "
                  f"{_odds(p.odds)}; {_tally(p.tally)}" for p in figures.pooled]
    if figures.ungraded:
        lines += ["", "ungraded (no expect: in the probe's front matter): "
                  + ", ".join(one_line(p) for p in figures.ungraded)]
    if not figures.probes:
        lines += ["", "no probe of the plan declares expectations (expect: in its front "
                      "matter, docs/expectations.md): nothing is graded"]
        return "\n".join(lines) + "\n"
    count = len(grading.sessions)
    lines += ["", f"verdicts ({count} recorded {'session' if count == 1 else 'sessions'} of "
                  "the graded probes):"]
    several = len(grading.batches) > 1
    lines += [_session_line(s, several=several) for s in grading.sessions]
    if grading.apart:
        count = len(grading.apart)
        lines += ["", f"apart ({count} {'session' if count == 1 else 'sessions'} not "
                      "recorded, outside every share):"]
        lines += [f"  {one_line(a.probe)} {a.arm} {one_line(a.session)}"
                  + (f" [{one_line(a.batch)}]" if several else "") + f": {one_line(a.state)}"
                  for a in grading.apart]
    return "\n".join(lines) + "\n"


def _head(grading: Grading, figures: Figures) -> list[str]:
    batches = ", ".join(one_line(b) for b in grading.batches)
    lines = [f"grade of {batches}",
             f"grader {grading.grader}; expectations from the corpus at "
             f"{one_line(grading.corpus)}; reference arm {figures.reference}; intervals 95%"]
    if grading.moved_read_set:
        lines.append(MOVED_SENTENCE)
    return lines


def _expected(expectations: Expectations) -> str:
    parts = []
    if expectations.answered is not None:
        parts.append(f"answered {one_line(expectations.answered)!r}")
    for key in ("opened", "not_opened", "cites"):
        values: tuple[str, ...] | None = getattr(expectations, key)
        if values is not None:
            parts.append(f"{key} {', '.join(one_line(v) for v in values)}")
    if expectations.clean:
        parts.append("clean")
    return "; ".join(parts)


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


def _interval(interval: Interval | None, *, points: bool = False) -> str:
    if interval is None:
        return "no interval"
    if points:
        return f"{100 * interval.low:+.0f} to {100 * interval.high:+.0f} points"
    return f"{_percent(interval.low)} to {_percent(interval.high)}"


def _share_row(share: Share) -> str:
    cell = share.cell
    figure = ("no recorded session" if share.share is None else
              f"{_percent(share.share)} ({_interval(share.interval)})")
    apart = ", ".join(f"{one_line(state)} {n}" for state, n in cell.apart.items())
    return (f"  {cell.arm}: satisfied {cell.satisfied}/{cell.recorded} {figure}; unsatisfied "
            f"{cell.unsatisfied}; not observed {cell.not_observed}"
            + (f"; apart: {apart}" if apart else ""))


def _difference_row(difference: Difference, reference: str) -> str:
    head = f"  {difference.arm} - {reference}:"
    if difference.difference is None or difference.fisher_p is None:
        return f"{head} untested (an arm has no recorded session)"
    disagree = (difference.outcome in ("win", "loss") and difference.fisher_p >= SIGNIFICANCE)
    return (f"{head} {100 * difference.difference:+.0f} points "
            f"({_interval(difference.interval, points=True)}), Fisher p = "
            f"{difference.fisher_p:.3g}: {difference.outcome}"
            + (f" (by the interval; Fisher's exact test does not reach {SIGNIFICANCE}: too few "
               "sessions to be sure, see docs/statistics.md)" if disagree else ""))


def _tally(tally: WinsLossesTies) -> str:
    counts = [f"{tally.wins} {'win' if tally.wins == 1 else 'wins'}",
              f"{tally.losses} {'loss' if tally.losses == 1 else 'losses'}",
              f"{tally.ties} {'tie' if tally.ties == 1 else 'ties'}"]
    if tally.untested:
        counts.append(f"{tally.untested} untested (an arm with no recorded session)")
    return ", ".join(counts)


def _odds(odds: CommonOddsRatio) -> str:
    if odds.estimate is None:
        return ("none (no probe informs it: one needs recorded sessions in both arms, some "
                "satisfied and some not)")
    value = "infinite" if math.isinf(odds.estimate) else f"{odds.estimate:.3g}"
    where = f"over {odds.strata} informative {'probe' if odds.strata == 1 else 'probes'}"
    if odds.interval is None:
        return f"{value} (no interval: a zero cross product), {where}"
    return f"{value} ({odds.interval.low:.3g} to {odds.interval.high:.3g}), {where}"


def _session_line(session: SessionGrade, *, several: bool) -> str:
    where = f" [{one_line(session.batch)}]" if several else ""
    head = (f"  {one_line(session.probe)} {session.arm} {one_line(session.session)}{where} "
            f"(event {session.event}): {session.verdict}")
    return "; ".join([head, *(_verdict(v) for v in session.verdicts)])


def _verdict(verdict: ExpectationVerdict) -> str:
    """``opened docs/a.md: satisfied (call 2, Read docs/a.md, names it)``: the reason names
    the call or artifact that decided it (the session's line names the event)."""
    target = "" if verdict.target is None else f" {one_line(verdict.target)}"
    return f"{verdict.key}{target}: {verdict.verdict} ({one_line(verdict.reason)})"
