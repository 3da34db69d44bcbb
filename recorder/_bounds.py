"""The bounds on what one session adds to the record: past most of them the session ends
``limit-exceeded`` (docs/batch.md "Session states"; docs/recorder.md), nothing is cut to fit.

Each bound was set against what a hostile session did before it (the figures in each
docstring); a real session stays far below every one. The transform reads them through
`recorder._transform`'s names, so a test may set one there.
"""

from __future__ import annotations

from typing import Final

ANOMALIES_KEPT: Final = 8
"""Non-JSON lines kept aside verbatim (truncated); later ones are only counted."""
ANOMALY_EXCERPT_BYTES: Final = 240
"""Bytes of each kept anomaly: enough to recognise a banner or a debug line."""
REASON_TEXT_CHARS: Final = 200
"""Characters of a result text quoted in a harness-error reason."""
MAX_CALL_ARGUMENT_CHARS: Final = 256 * 1024
"""The most one call's argument may add to the ledger and the transcript, in characters: a
call past it ends the session ``limit-exceeded`` (the contract wants the argument as given,
so it is never cut to fit). Real arguments are commands, paths and patterns; 256 Ki is a
large heredoc (docs/recorder.md)."""
MAX_SESSION_ARGUMENT_CHARS: Final = 16 * 1024 * 1024
"""The most all of one session's kept arguments may hold, in characters (``limit-exceeded``
past it): what one session can make the ledger, the transcript and the runner's memory hold."""
MAX_SESSION_CALLS: Final = 10_000
"""The most calls (orphan results included) one session may add to the record: past it the
session is ``limit-exceeded``. Each costs the runner kilobytes (measured: a million calls of
two characters, 45 MB of stdout, held it 4.1 GB and five minutes); a long real session makes
hundreds."""
MAX_MESSAGE_CHARS: Final = 4 * 1024 * 1024
"""The most text one assistant message may hold, over all the lines that carry its id: past
it the session is ``limit-exceeded`` (forty 16 MB lines of one message id, a 29 KB
compressed stream, made the runner hold and write a 671 MB final text)."""
MAX_REASON_CHARS: Final = 2000
"""A refusal's reason is cut past this (it quotes what the stream gave), and at most
`ANOMALIES_KEPT` distinct ones are kept."""
MAX_NAME_CHARS: Final = 256
"""The longest served model name or harness version kept (the real ones are tens of
characters): a longer one ends the session ``limit-exceeded`` and is not kept (30 MB of
each made one recorded session's ledger line 63 MB and its transcript 94 MB)."""
MAX_KEPT_ID_CHARS: Final = 256
"""A call that is not kept still pairs with its result by its id, when the id is this short."""
MAX_SESSION_LINES: Final = 1_000_000
"""The most stdout lines one session may print: the driver ends it ``limit-exceeded`` at
the next one (docs/recorder.md "Sharing the event loop"). The pinned CLI's captures print
tens of lines, a long real session thousands; each line costs the runner a parse on the
event loop every session shares (a blank one about 0.3 us, a short JSON one 1.5 us), and
16 MiB of blank lines, 16.8 million of them, cost 82 s of the runner's CPU before the
bound, under the default stdout bound. A million lines is a second or two of a core."""
MAX_LINE_VALUES: Final = 1_000_000
"""The most JSON values one stdout line may decode to, counted before it is decoded as its
bytes ``{``, ``[`` and ``,`` (`recorder._harness.json_values`, an over-count: those inside
strings count too): a line past it is not decoded and the session ends ``limit-exceeded``.
The line's bytes are bounded by the reader's line cap; what they decode to is not: three
60 MiB lines of ``{},{},...`` (20 million empty objects each) held the runner 1.8 GB. A value
costs at most about 150 bytes decoded (measured: ``{"a":1.5}``, a dict and a `Decimal` for
two of the bytes counted), so this holds one line's objects to about 150 MB. The real lines
count at most 104 (the largest, 1.4 MB, 21); a line shorter than this bound in bytes
is never refused, and the longest real text a line carries (a Read result, printed twice)
is far below it (docs/recorder.md)."""
