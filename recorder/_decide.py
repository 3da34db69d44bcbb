"""The session state from how the stream ended and what it showed (docs/batch.md, "Session states").

`decide` applies, for a stream RC-07 did not refuse and no bound ended, the table
`recorder._transform` documents: the first that applies of

1. ``limit-exceeded`` for a runner's own bound the driver ended it by (stdout, stderr,
   lines); ``line-too-long``, ``timed-out`` (the driver's end), ``truncated`` (a tail
   without newline);
2. ``refused-init`` (RC-07);
3. ``env-fault`` (a declared MCP server reported ``failed``);
4. no result line: ``killed`` when the exit status is a signal, else ``no-result``;
5. the last result line: ``is_error`` true -> ``harness-error`` (BC-10a/b);
6. ``damaged``: a non-JSON line stands after the final message and before the result;
7. else ``recorded``.

A harness the driver ended after the post-result grace (``end="post-result-grace"``) is
decided by 5-7, from what it printed; its SIGTERM status is not a ``killed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TypeAlias

from recorder._bounds import REASON_TEXT_CHARS
from recorder._vocab import DriveEnd

if TYPE_CHECKING:
    from collections.abc import Sequence

    from recorder._result_line import ResultLine
    from recorder._vocab import SessionState

__all__ = ["SIGNAL_EXIT_BASE", "End", "decide"]

End: TypeAlias = DriveEnd
"""How the driver saw the stream end: the driver's own vocabulary (`recorder._vocab`)."""

SIGNAL_EXIT_BASE: Final = 128
"""An exit status above this is 128 + the signal that ended the process (bwrap, sh)."""

_AFTER_GRACE: Final = ("the harness neither printed nor exited within the post-result grace "
                       "after it and was ended by the runner")


def decide(end: End, exit_status: int | None, tail: bytes | None, *, lines: int,
           too_long: str | None, refusals: Sequence[str], failed_mcp: Sequence[str],
           result: ResultLine | None) -> tuple[SessionState, str]:
    """The state and its reason, by the table of the module doc (the first that applies).

    Args:
        end: How the driver saw the stream end.
        exit_status: The harness's exit status; negative = killed by that signal.
        tail: A final fragment with no newline (the stream was cut), else None.
        lines: Complete stdout lines read (a line too long is the next one).
        too_long: The reader's message for ``end="line-too-long"`` (line number, size).
        refusals: RC-07's reasons so far (any refuses the init).
        failed_mcp: Declared MCP servers the init line reported ``failed``.
        result: The last result line the state is read from; None when there was none.
    """
    if end == "stdout-limit":  # the caller names the bound in limit_exceeded
        return "limit-exceeded", ("limit-exceeded: it printed more on stdout than its "
                                  "bound (--max-stdout)")
    if end == "stderr-limit":
        return "limit-exceeded", ("limit-exceeded: it printed more on stderr than its "
                                  "bound (--max-stdout, applied to stderr)")
    if end == "line-limit":
        return "limit-exceeded", ("limit-exceeded: it printed more lines on stdout than "
                                  "a session may (docs/recorder.md)")
    if end == "line-too-long":
        return "line-too-long", "line-too-long: " + (
            too_long or f"line {lines + 1} exceeded the reader's line cap")
    if end == "timed-out":
        return "timed-out", "timed-out: the session's wall-clock limit fired"
    if end == "watchdog" or (end == "post-result-grace" and result is None):
        return "timed-out", "timed-out: the no-output watchdog fired"
    if tail is not None:
        return "truncated", f"truncated: the last line ({len(tail)} bytes) has no newline"
    if refusals:
        return "refused-init", "; ".join(refusals)
    if failed_mcp:
        names = ", ".join(repr(name) for name in failed_mcp)
        return "env-fault", (f"env-fault: mcp_servers name = {names}: declared by the "
                             "workspace's .mcp.json, status 'failed'")
    if result is None:
        if exit_status is not None and (exit_status < 0 or exit_status > SIGNAL_EXIT_BASE):
            # Popen gives -N for a signal; bwrap (and a shell) report 128 + N.
            signum = -exit_status if exit_status < 0 else exit_status - SIGNAL_EXIT_BASE
            return "killed", (f"killed: the harness ended by signal {signum} "
                              f"(exit status {exit_status}) with no result line")
        return "no-result", (f"no-result: the stream ended (exit status {exit_status}) "
                             "with no result line")
    ended = f"; {_AFTER_GRACE}" if end == "post-result-grace" else ""
    if result.is_error:
        text = (result.text or "")[:REASON_TEXT_CHARS]
        return "harness-error", (f"harness-error: last result is_error true "
                                 f"(subtype {result.subtype}, "
                                 f"api_error_status {result.api_error_status}): {text}{ended}")
    if result.damaged_at is not None:
        return "damaged", (f"damaged: line {result.damaged_at} is not JSON and stands after "
                           "the last main-thread assistant message, before the result: the "
                           f"final message may be that line, so no answer is read{ended}")
    return "recorded", f"recorded: the last result line has is_error false{ended}"
