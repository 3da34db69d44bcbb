"""``doctor``'s ``limits`` check (`sandbox.checks._limit_checks`): three answers, no pass unseen.

On this host it is exercised for real (two probes under the real bwrap); the
other answers come from what the probes would have shown on a host that sets
no limits, or whose probe hangs.
"""

from __future__ import annotations

import pytest

from sandbox._capture import Run
from sandbox._layout import measure_host_layout
from sandbox.cgroup import LimitHit, MiB
from sandbox.checks._limit_checks import _verdict, check_limits
from sandbox.users import session_user

SEEN = f"nofile 64 64 tmp {4 * MiB}\n"
MEMORY = LimitHit("memory", "...")
PROCESSES = LimitHit("processes", "...")


@pytest.mark.bwrap
def test_the_limits_are_enforced_and_seen_on_this_host(bwrap: str) -> None:
    check = check_limits(bwrap, measure_host_layout(), session_user())
    assert (check.name, check.verdict) == ("limits", "ok"), check


def test_all_four_seen_is_ok() -> None:
    check = _verdict((Run(-9, SEEN, ""), MEMORY, True), (Run(-9, "", ""), PROCESSES, False))
    assert check.verdict == "ok"


@pytest.mark.parametrize(
    ("memory", "pids", "says"),
    [
        ((Run(-9, "nofile 20000 20000 tmp 12884901888\n", ""), MEMORY, True),
         (Run(-9, "", ""), PROCESSES, False), "open files or /tmp not as set"),
        ((Run(0, SEEN, ""), None, True), (Run(-9, "", ""), PROCESSES, False), "memory"),
        ((Run(-9, SEEN, ""), MEMORY, False), (Run(-9, "", ""), PROCESSES, False), "/tmp"),
        ((Run(-9, SEEN, ""), MEMORY, True), (Run(0, "", ""), None, False), "processes"),
    ],
    ids=["no-nofile-no-size", "no-memory", "tmp-unseen", "no-pids"],
)
def test_a_limit_not_enforced_or_not_seen_is_broken(
        memory: tuple[Run, LimitHit | None, bool], pids: tuple[Run, LimitHit | None, bool],
        says: str) -> None:
    check = _verdict(memory, pids)
    assert check.verdict == "broken" and says in check.detail and check.fix


def test_a_probe_that_gives_no_answer_is_could_not_verify() -> None:
    hung = Run(None, "", "", timed_out=True)
    check = _verdict((hung, None, False), (Run(-9, "", ""), PROCESSES, False))
    assert check.verdict == "unverified"
