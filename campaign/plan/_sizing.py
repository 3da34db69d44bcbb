"""What ``plan`` says before anything is spent besides the plan: the sizing and the projection.

* `sizing_lines` - per tier, the smallest difference in a probe's satisfied share that the
  tier's repetitions (sessions per probe and arm) detect (`campaign.stats.detectable_difference`:
  two-sided 95%, 80% power, at a base rate), and the repetitions a few differences need.
* `projection_lines` - a plan's cost and wall time, projected from a finished batch's figures
  per recorded session (`BatchFigures`; the command reads the batch).

Both are text for people only: a plan file never holds them (docs/plan.md, "Before spending").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from campaign.stats import CONFIDENCE, POWER, detectable_difference, repetitions_needed

TARGETS: Final = (0.5, 0.3, 0.2, 0.1)
"""The differences whose repetitions the sizing lists, from the base rate upwards."""


def _share(x: float) -> str:
    return f"{x * 100:.0f}%" if abs(x * 100 - round(x * 100)) < 0.05 else f"{x * 100:.1f}%"


def sizing_lines(tiers: Mapping[str, tuple[int, tuple[str, ...]]], *,
                 base_rate: float) -> list[str]:
    """The sizing section of ``plan``: one line per tier (name -> its repetitions and arms; a
    tier of one arm has no difference to detect), then how many
    repetitions each difference of `TARGETS` needs (`repetitions_needed`: Fisher's exact test
    up to 60, the pooled z test's formula above; a difference past 100% is left out).

    Raises:
        ValueError: ``base_rate`` outside (0, 1), or a tier with fewer than 1 repetition.
    """
    lines = [f"sizing (the smallest difference in a probe's satisfied share between two arms "
             f"that a tier's repetitions tell from noise: two-sided {CONFIDENCE:.0%}, "
             f"{POWER:.0%} power, from a base rate of {_share(base_rate)}; --base-rate P "
             "changes it):"]
    for tier, (n, arms) in tiers.items():
        if len(arms) < 2:
            lines.append(f"  tier {tier}: one arm ({', '.join(arms)}): no difference between "
                         "arms to detect")
            continue
        found = detectable_difference(n, base_rate=base_rate)
        test = ("Fisher's exact test, enumerated" if found.method == "fisher-exact"
                else "the pooled two-proportion z test, normal approximation")
        reps = plural(n, "repetition")
        if found.difference is None or found.other is None:
            lines.append(f"  tier {tier}: none: {reps} cannot tell any difference from noise "
                         f"at {CONFIDENCE:.0%} ({test})")
        else:
            lines.append(f"  tier {tier}: {reps} detect {found.difference * 100:.1f} points "
                         f"({_share(base_rate)} against {_share(found.other)}; {test})")
    needs = []
    for target in TARGETS:
        if base_rate + target <= 1.0:
            n, method = repetitions_needed(base_rate, base_rate + target)
            needs.append(f"{target * 100:.0f} points: {n}"
                         + (" (normal approximation)" if method == "normal-pooled-z" else ""))
    if needs:
        lines.append(f"  repetitions a tier needs to detect, from {_share(base_rate)} "
                     f"upwards: {'; '.join(needs)}")
    return lines


@dataclass(frozen=True, slots=True)
class BatchFigures:
    """A finished batch's realized figures, what a projection scales."""

    path: str
    recorded: int
    """Recorded sessions: the denominator of both figures."""
    spend_usd: Decimal
    """Every known attempt cost of the batch (retries and failed attempts included)."""
    cost_unknown: int
    """Attempts whose cost is unknown: the spend is then a lower bound."""
    attempt_s: float
    """The summed wall time of every attempt with a duration (retries included), seconds."""
    scripted: bool = False
    """The batch ran against the scripted provider: its usage and times are the scripts'."""


def plural(n: int, word: str) -> str:
    """``1 repetition``, ``2 repetitions``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


SCRIPTED_NOTE: Final = (
    "  that batch ran against the scripted provider: its cost prices the usage its scripts "
    "report and its times hold no model's latency, so neither projects a real batch")
"""Said under a projection from a scripted batch (``plan --from``)."""


def projection_lines(sessions: int, figures: BatchFigures, *, concurrency: int) -> list[str]:
    """The projection section of ``plan --from BATCH``: ``sessions`` times the batch's cost
    and wall time per recorded session, the wall time divided over ``concurrency`` sessions
    at once (never below one session's).

    Raises:
        ValueError: ``concurrency < 1``.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency is at least 1, got {concurrency}")
    head = f"projection from batch {figures.path}"
    if figures.recorded == 0:
        return [f"{head}: none: the batch has no recorded session, so it gives no cost or "
                "wall time per session"]
    cents = figures.spend_usd * 100 / figures.recorded
    least = "at least " if figures.cost_unknown else ""
    unknown = (f"; {figures.cost_unknown} of its attempts "
               f"{'has' if figures.cost_unknown == 1 else 'have'} an unknown cost, so this is "
               "a lower bound" if figures.cost_unknown else "")
    per_s = figures.attempt_s / figures.recorded
    wall = max(per_s, sessions * per_s / concurrency)
    return [
        f"{head} ({figures.recorded} recorded sessions; retries and failed attempts counted "
        "in both figures):",
        f"  cost: {least}{cents * sessions:.2f} cents = {sessions} sessions x "
        f"{least}{cents:.2f} cents per recorded session{unknown}",
        f"  wall time: about {_duration(wall)} = {sessions} sessions x {per_s:.1f} s per "
        f"recorded session / concurrency {concurrency} (--concurrency N)",
        *([SCRIPTED_NOTE] if figures.scripted else []),
    ]
