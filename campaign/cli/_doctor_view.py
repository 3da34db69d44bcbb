"""``doctor``'s output: one line per check and its exit status (docs/cli.md).

The checks themselves (`campaign.doctor`) print nothing; the command line prints their
report here, every detail escaped (a detail may quote what a program printed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from campaign._terminal_text import one_line

if TYPE_CHECKING:
    from sandbox import PreflightReport

LABELS: Final = {"ok": "verified ok", "broken": "verified broken", "unverified": "could not verify"}
"""How the three answers are printed (never a pass for "could not verify")."""


def print_report(report: PreflightReport) -> None:
    """Print one line per check: its answer, name and detail; then its fix when not ok.

    When credentials are the only check not verified ok, a last line says that
    the demo and scripted dry runs can run here all the same.
    """
    width = max(len(label) for label in LABELS.values())
    for check in report.checks:
        # A detail may quote what a program printed (the harness's --version): escaped.
        print(f"{LABELS[check.verdict]:>{width}}  {check.name}: {one_line(check.detail)}")
        if check.fix and check.verdict != "ok":
            print(f"{'':>{width}}  fix: {one_line(check.fix)}")
    failing = [c.name for c in report.checks if c.verdict != "ok"]
    if failing == ["credentials"]:
        print("everything but the credentials is verified ok: `demo` and `run --provider "
              "scripted` can run here; a batch against a real provider needs the credentials")


def exit_status(report: PreflightReport) -> int:
    """``doctor``'s status: 0 all verified ok, 12 any verified broken, else 4."""
    if report.broken:
        return 12
    return 0 if report.ok else 4
