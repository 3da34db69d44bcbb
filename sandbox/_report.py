"""The preflight's answers: a `Check` per check, three verdicts, the `PreflightReport` (RC-05).

A leaf: it imports nothing of `sandbox`, so the errors that carry a report
(`sandbox._errors.PreflightFailed`) and the checks that make one share these types without
an import cycle. Three answers, never a pass for the third: ``ok`` verified to work,
``broken`` verified not to, ``unverified`` could not tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Check", "PreflightReport", "Verdict"]

Verdict = Literal["ok", "broken", "unverified"]
"""``ok``: verified to work; ``broken``: verified not to work; ``unverified``: could not tell."""


@dataclass(frozen=True, slots=True)
class Check:
    """One preflight answer.

    Attributes:
        name: e.g. ``"bwrap"``, ``"host-layout"``, ``"session-user"``,
            ``"user-namespaces"``, ``"sandbox"``, ``"harness"``.
        verdict: ``ok``, ``broken`` or ``unverified``.
        detail: What was seen, for a human: a version, bwrap's own message, a cause.
        fix: What to do when not ok; empty when ok.
    """

    name: str
    verdict: Verdict
    detail: str
    fix: str = ""


@dataclass(frozen=True, slots=True)
class PreflightReport:
    """Every check preflight ran, in order (RC-05).

    Attributes:
        checks: The answers; never empty when built by `preflight`.
    """

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """True when there are checks and every one is ``ok``."""
        return bool(self.checks) and all(check.verdict == "ok" for check in self.checks)

    @property
    def broken(self) -> bool:
        """True when any check is verified ``broken`` (doctor exit 12)."""
        return any(check.verdict == "broken" for check in self.checks)

    @property
    def unverified(self) -> bool:
        """True when any check could not run (doctor exit 4 when nothing is broken)."""
        return any(check.verdict == "unverified" for check in self.checks)

    @property
    def problems(self) -> tuple[str, ...]:
        """One line per check that is not ok: ``name: verdict: detail (fix: ...)``."""
        return tuple(
            f"{c.name}: {c.verdict}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "")
            for c in self.checks
            if c.verdict != "ok"
        )

    @property
    def harness_version(self) -> str | None:
        """The harness's ``--version`` line as run inside the sandbox, when that check is ok."""
        found = [c for c in self.checks if c.name == "harness" and c.verdict == "ok"]
        return found[0].detail if found else None
