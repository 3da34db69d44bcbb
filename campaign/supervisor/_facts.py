"""What an attempt's final record says beyond its stream: what a stopped attempt had observed,
a silent harness's stderr, the limits the sandbox saw passed."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from campaign.supervisor._outcome import AttemptOutcome, gated
from campaign.supervisor._streams import StreamKeeper
from recorder import SessionState, StreamObserver, observed_calls
from sandbox import EMPTY_TIMEOUT_S, LimitHit, format_bytes

if TYPE_CHECKING:
    from sandbox.gateway import Gateway

    from ._gate import AttemptGate

LIMIT_FLAGS: Final = {"processes": "--max-processes", "memory": "--max-memory",
                      "tmp": "--max-tmp", "writes": "--max-writes",
                      "connections": "--max-connections",
                      "stdout": "--max-stdout", "stderr": "--max-stdout, applied to stderr",
                      "lines": "a fixed bound: docs/recorder.md"}  # fmt: skip
"""The option that sets each limit, named in a ``limit-exceeded`` reason (the bound on a
session's lines is no option: docs/recorder.md "Sharing the event loop")."""



@dataclass(slots=True)
class Progress:
    """What an attempt has observed so far, for the final record of an attempt the runner
    stopped: the calls, lines and served model seen and the stream kept are recorded
    facts however the attempt ended (BC-01), so a ``killed`` record keeps them."""

    workspace: Path | None = None
    manifest: dict[str, str] | None = None
    observer: StreamObserver | None = None
    keeper: StreamKeeper | None = None
    inside: str | None = None
    """The workspace path the session saw (RC-02), against which its paths resolve."""
    uncontained: str | None = None
    """The ``uncontained`` reason once the sandbox's end found a process outliving the
    cgroup kill (`uncontained_reason`): a stopped attempt is then written ``uncontained``."""
    gate: AttemptGate | None = None
    gateway: Gateway | None = None
    """The attempt's provider gateway once opened, and its gate: a stopped attempt keeps
    their counts (its requests are in the ledger already) and its served model."""

    def stopped(self, batch: Path, *, state: SessionState, reason: str, retryable: bool,
                counts: bool = True) -> AttemptOutcome:
        """The outcome of an attempt the runner stopped, ended as ``state`` (``killed``, or
        ``uncontained``), with what it had observed: its cost is unknown (BC-01)."""
        stopped = AttemptOutcome(state=state, reason=reason, retryable=retryable,
                                 counts=counts, cost_known=False)
        if self.keeper is not None:
            stopped = replace(stopped, stream=self.keeper.path.relative_to(batch).as_posix(),
                              stream_bytes=self.keeper.bytes_in)
        if self.gate is not None and self.gateway is not None:
            stopped = gated(stopped, self.gate, self.gateway)
        if self.observer is None or self.workspace is None or self.manifest is None:
            return stopped
        obs = self.observer.finish(end="exited", exit_status=None, tail=None)
        calls = observed_calls(obs.calls, workspace=self.workspace, inside=self.inside,
                               manifest=self.manifest) if obs.calls else None
        served = (self.gate.served_model(obs.served_message_id)
                  if self.gate is not None else None) or obs.served_model
        return replace(stopped, lines=obs.lines, served_model=served,
                       claude_code_version=obs.claude_code_version,
                       outside_paths=len(obs.outside_paths), anomalies=obs.anomaly_count,
                       anomaly_lines=obs.anomalies, orphan_results=obs.orphan_results,
                       calls=None if calls is None else tuple(calls),
                       unknown_init_keys=obs.unknown_init_keys)


SILENT_STDERR_CHARS: Final = 200
"""Characters of a silent harness's last stderr line a reason quotes."""


def silent_stdout(lines: int, stderr_end: bytes) -> str:
    """For an attempt that printed no stdout line: the last line of its stderr, as one JSON
    string (empty when it printed none). A sandbox that never started (bwrap refused a
    namespace) and a harness that died at once are told apart only there."""
    if lines:
        return ""
    last = next((line for line in reversed(stderr_end.decode("utf-8", "replace").splitlines())
                 if line.strip()), None)
    if last is None:
        return ""
    return (f"; nothing was printed on stdout, and stderr ends "
            f"{json.dumps(last.strip()[:SILENT_STDERR_CHARS])}")


def kept_stream_check(keeper: StreamKeeper, limit_bytes: int) -> Callable[[], LimitHit | None]:
    """The session's kept stdout against its writes limit, polled by the sandbox's watch.

    The runner writes what the session prints into the batch (compressed): a session that
    prints what zstd cannot shrink otherwise writes the host's disk full, whatever its
    writes limit (1 GB printed in 3 s kept 586 MB under ``--max-writes 16M``).
    """
    def check() -> LimitHit | None:
        try:
            kept = keeper.path.stat().st_size
        except OSError:
            return None
        if kept <= limit_bytes:
            return None
        return LimitHit("writes", f"the runner kept {format_bytes(kept)} of what it printed, "
                                  f"over its {format_bytes(limit_bytes)}")
    return check


def limit_reason(hit: LimitHit | None) -> str | None:
    """The ``limit-exceeded`` reason of a sandbox limit passed: what was seen, and its option."""
    return None if hit is None else f"limit-exceeded: {hit.detail} ({LIMIT_FLAGS[hit.limit]})"


def uncontained_reason(stream_reason: str | None = None) -> str:
    """The reason of an ``uncontained`` attempt (docs/batch.md "Session states").

    The sandbox's cgroup was not empty and removed within `EMPTY_TIMEOUT_S`
    seconds of ``cgroup.kill``: a process of the session may still write its
    workspace and log, so the runner read nothing of them (docs/confinement.md,
    "Process containment"). ``stream_reason``: the reason its stream alone
    gives (the state the attempt would otherwise have ended in), appended so
    that nothing observed is lost.
    """
    reason = (f"uncontained: the session's cgroup still held a process (or could not be "
              f"removed) {EMPTY_TIMEOUT_S:.0f} s after the runner killed it, so nothing the "
              "session left was read: its workspace and log are not kept in the batch, no "
              "file it made is digested and no checker ran; the cgroup is left for the next "
              "runner's sweep")
    return reason if stream_reason is None else f"{reason}; its stream alone said {stream_reason}"
