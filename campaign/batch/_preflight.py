"""The checks that run before every batch: the sandbox's preflight and the skills check.

`sandbox_checks` is `sandbox.preflight` (bwrap, the host layout, the session user, user
namespaces, the sandbox, the harness inside it) plus ``skills``: no host skill directory has
the name of a skill the harness lists, or every session's init line would be refused (RC-07).
Any check that is not verified ok stops the batch with exit 12 before any session, credentials
copy or spend. ``doctor`` runs these and more (`campaign.doctor`); neither prints: the command
line prints the report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Final

from recorder import DriveResult, drive_child, harness_command, host_skill_names
from sandbox import (
    HARNESS_MOUNT,
    Check,
    PreflightReport,
    SessionUserUnusable,
    SpawnFailed,
    check_session_user,
    hold_lease,
    measure_host_layout,
    open_confined,
    preflight,
    probe_spec,
    run_sync,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sandbox import ConfinedSpec

__all__ = ["check_skills", "sandbox_checks"]

SKILLS_PROBE_TIMEOUT_S: Final = 60.0
"""The init line comes before any request (about 1 s measured); a cold 240 MB binary may take
tens of seconds to load, as for the harness check."""
DEAD_PROVIDER_URL: Final = "http://127.0.0.1:9"
"""The skills probe's provider: the discard port on loopback, where nothing answers, so the
harness prints its init line and then only retries; it is killed after the init line."""
PROBE_API_KEY: Final = "headwater-doctor-placeholder-not-a-key"
"""A placeholder so the harness starts without credentials; no request ever succeeds."""
PROBE_TASK: Final = "headwater doctor: list your skills (this session is stopped at once)"
PROBE_MODEL: Final = "headwater-doctor-probe"

def sandbox_checks(
    *, bwrap: str, harness: Path | None, host_skill_dirs: Sequence[Path],
    lease_wait_s: float | None = None,
) -> PreflightReport:
    """The checks that run before every batch: `sandbox.preflight` plus ``skills``.

    Args:
        bwrap: The bwrap executable.
        harness: The harness, or None when it could not be found (then the
            ``harness`` check is broken and ``skills`` unverified).
        host_skill_dirs: ``~/.claude/skills`` and ``$CLAUDE_CONFIG_DIR/skills`` of the runner.
        lease_wait_s: Seconds the probes wait at most for a free session user
            (`sandbox.preflight`); None, before a batch, as long as it takes.

    Returns:
        The report; a batch starts only when ``report.ok``.
    """
    report = preflight(bwrap=bwrap, harness=harness, lease_wait_s=lease_wait_s)
    checks = list(report.checks)
    if harness is None:
        checks.append(Check("harness", "broken", "the harness executable was not found",
                            "run `make harness`, or pass --harness PATH"))  # fmt: skip
    checks.append(check_skills(report, bwrap=bwrap, harness=harness, dirs=host_skill_dirs,
                               lease_wait_s=lease_wait_s))  # fmt: skip
    return PreflightReport(tuple(checks))


def check_skills(
    report: PreflightReport, *, bwrap: str, harness: Path | None, dirs: Sequence[Path],
    lease_wait_s: float | None = None,
) -> Check:
    """``skills``: no host skill directory has the name of a skill the harness lists (RC-07).

    With no host skill directory nothing can shadow, and that is verified
    without running anything. Otherwise the harness is started confined,
    like a session, in an empty workspace pointed at a dead provider; its
    init line lists the skills every session will show, and it is killed
    right after that line (nothing is requested, nothing spent); as a session
    user leased for it, waiting at most ``lease_wait_s`` (None: as long as it takes).
    """
    host = host_skill_names(dirs)
    where = ", ".join(str(d) for d in dirs)
    if not host:
        return Check("skills", "ok", f"no host skill directory ({where}): nothing can shadow")
    if harness is None or report.harness_version is None:
        return Check("skills", "unverified", "not run: the harness does not start in the sandbox")
    listed, problem = _listed_skills(bwrap, harness, lease_wait_s)
    if listed is None:
        return Check("skills", "unverified", problem)
    shadowed = sorted(host & listed)
    if shadowed:
        return Check(
            "skills", "broken",
            f"host skill directories named {', '.join(shadowed)} (under {where}) have the name "
            "of a skill the harness lists: every session's init line would be refused "
            "(docs/glossary.md: RC-07)",
            "rename or move those directories out of the host's skill directories",
        )  # fmt: skip
    return Check("skills", "ok", f"the harness lists {len(listed)} skills; the host's "
                 f"{len(host)} skill directories ({where}) shadow none")  # fmt: skip


class _InitSeen(Exception):
    """The skills probe's init line arrived: stop the harness (it carries the line)."""

    def __init__(self, line: bytes) -> None:
        super().__init__("init line seen")
        self.line = line


def _listed_skills(bwrap: str, harness: Path,
                   lease_wait_s: float | None) -> tuple[set[str] | None, str]:
    try:
        _, pool, _ = check_session_user()
        with hold_lease(pool, timeout_s=lease_wait_s) as user:
            spec = probe_spec(
                bwrap=bwrap, layout=measure_host_layout(), executable=harness.resolve(),
                command=harness_command(harness_mount=HARNESS_MOUNT, task=PROBE_TASK,
                                        model=PROBE_MODEL, allowed_tools=("Read",)),
                user=user, provider_url=DEAD_PROVIDER_URL, api_key=PROBE_API_KEY,
            )  # fmt: skip
            matched, ended = run_sync(_first_init_line, spec)
    except (OSError, SessionUserUnusable, SpawnFailed) as exc:
        return None, f"the harness could not be started for its skill list: {exc}"
    if matched is None:
        how = ("timed out" if ended is None or ended.end != "exited"
               else f"ended with status {ended.exit_status}")  # fmt: skip
        tail = ended.stderr_end.decode("utf-8", "replace") if ended is not None else ""
        return None, f"the harness printed no init line ({how}): {tail.strip()[-300:]}"
    skills = json.loads(matched).get("skills")
    if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
        return None, f"the init line's skills field has an unknown shape: {skills!r:.200}"
    return set(skills), ""


async def _first_init_line(spec: ConfinedSpec) -> tuple[bytes | None, DriveResult | None]:
    """Run the probe until its first init line (then it is stopped) or its end."""

    def on_line(line: bytes) -> None:
        if _is_init(line):
            raise _InitSeen(line)

    try:
        async with open_confined(spec) as sandbox:
            ended = await drive_child(sandbox.child, on_line=on_line, stderr_tail=None,
                                      wall_limit_s=SKILLS_PROBE_TIMEOUT_S,
                                      watchdog_s=SKILLS_PROBE_TIMEOUT_S)  # fmt: skip
    except _InitSeen as seen:
        return seen.line, None
    return None, ended


def _is_init(line: bytes) -> bool:
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("type") == "system" and (
        value.get("subtype") == "init"
    )
