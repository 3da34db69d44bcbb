"""The batch ledger: ``ledger.jsonl``, one typed record per line, appended and fsynced.

The ledger is the batch's memory: transcripts are projections of it, and
``resume`` reruns only what it does not show as finished. Each line is one
`campaign.batch._records` record, written whole with one ``write(2)`` loop and
fsynced before `Ledger.append` returns.

A runner killed mid-append leaves a last line without its newline. Readers
ignore such a fragment (a running batch is read while it is written, so the
fragment may still be growing); the next writer to open the ledger sets it
aside in a file of its own, cuts the ledger back to its last newline and
appends a ``torn`` record naming the file, so the fragment is kept but never
glued to the next append. A failed append (the disk is full) cuts the ledger
back to where it was, so the file never holds a part of a line it did not
finish.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

import anyio
from pydantic import ValidationError

from campaign._json_text import json_safe
from recorder import fsync_dir

from ._records import RECORD_ADAPTER, LedgerHeader, LedgerRecord, TornRecord
from ._sequence import AttemptOrder

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel

LEDGER_NAME: Final = "ledger.jsonl"
_ALWAYS_WRITTEN: Final = ("kind", "format")
"""Fields written even at their default: the tag and the format version."""


class LedgerCorrupt(Exception):
    """A complete line of the ledger is not a record this runner writes (exit 2).

    Attributes:
        path: the ledger. line: its 1-based line number. problem: what is wrong.
    """

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}; a ledger line the runner did not write "
                         "is not evidence, so the batch cannot be read")
        self.path = path
        self.line = line
        self.problem = problem


def encode_record(record: BaseModel) -> bytes:
    """One ledger line for ``record``: compact JSON, keys sorted, ``\\n``.

    A field at its fixed default (``counts: true``, ``event: null``) is left
    out; the tag, the format and every field whose default is made when the
    record is (the times) are always written.
    """
    data = record.model_dump()  # python mode: JSON mode refuses a lone surrogate
    for name, info in type(record).model_fields.items():
        fixed = info.default_factory is None and not info.is_required()
        if fixed and name not in _ALWAYS_WRITTEN and data.get(name) == info.default:
            del data[name]

    # ASCII only. A record holds no lone surrogate (`_records._Record` writes each as
    # `campaign._json_text` does; json_safe again for a record made without validation),
    # so a strict JSON reader takes every line (docs/batch.md, "Names that are not UTF-8").
    text = json.dumps(json_safe(data), ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return text.encode("ascii") + b"\n"


def decode_record(raw: bytes, *, path: Path, line: int) -> LedgerRecord:
    """Validate one complete ledger line (without its newline) into its record.

    Raises:
        LedgerCorrupt: not JSON, not an object, or not one of the record shapes.
    """
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LedgerCorrupt(path, line, f"not a JSON line ({exc})") from exc
    if not isinstance(data, dict):
        raise LedgerCorrupt(path, line, "not a JSON object")
    try:
        return RECORD_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise LedgerCorrupt(path, line, _describe(exc, data.get("kind"))) from exc


def _describe(exc: ValidationError, kind: object) -> str:
    """The first problem of a record line, in words."""
    first = exc.errors(include_url=False)[0]
    loc = [str(p) for p in first["loc"]][1:]  # the first element is the kind's tag
    field = ".".join(loc)
    if first["type"] == "union_tag_invalid" or first["type"] == "union_tag_not_found":
        return f"kind {kind!r} is not a kind of ledger record"
    if first["type"] == "extra_forbidden":
        return f"{field}: a {kind} record has no such field"
    if first["type"] == "missing":
        return f"{field}: a {kind} record needs this field"
    return f"{field}: {first['msg']} (got {first.get('input')!r})"


def read_ledger(path: Path) -> Iterator[LedgerRecord]:
    """Yield the complete records of ``path`` in order, streaming (one line in memory).

    A last line without a newline is skipped: a crash cut it, or a writer is
    appending it right now. A missing file yields nothing.

    Raises:
        LedgerCorrupt: a complete line is not a record, the first is not the header,
            or a session's records break the order the runner writes them in (a second
            final record for one attempt; see `campaign.batch._sequence`).
    """
    for _, record in read_ledger_at(path):
        yield record


def read_ledger_at(path: Path) -> Iterator[tuple[int, LedgerRecord]]:
    """`read_ledger` with each record's byte offset in the file (what `Ledger.append` returned
    when it wrote the record: the reference of a recorded event)."""
    for offset, _, record in read_ledger_spans(path):
        yield offset, record


def read_ledger_spans(path: Path) -> Iterator[tuple[int, int, LedgerRecord]]:
    """`read_ledger` with each record's line as byte offsets: (start, end after its newline)."""
    try:
        fp = path.open("rb")
    except FileNotFoundError:
        return
    offset = 0
    order = AttemptOrder()
    with fp:
        for number, raw in enumerate(fp, start=1):
            if not raw.endswith(b"\n"):
                return
            record = decode_record(raw[:-1], path=path, line=number)
            if number == 1 and not isinstance(record, LedgerHeader):
                raise LedgerCorrupt(path, 1, "the first line is not the ledger header")
            if (problem := order.check(record)) is not None:
                raise LedgerCorrupt(path, number, problem)
            yield offset, offset + len(raw), record
            offset += len(raw)


def complete_bytes(path: Path) -> int:
    """The bytes of ``path``'s complete lines: up to its last newline (0: none, or no file)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return 0
    try:
        return _last_line_start(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


class Ledger:
    """The append side of ``ledger.jsonl``: one writer per batch (the batch lock ensures it).

    Thread-safe: `append` may be called from worker threads (`aappend` does
    so, to keep fsync off the event loop); appends are serialised.
    """

    def __init__(self, path: Path) -> None:
        """Open ``path`` for appending, creating it with its header, repairing a torn tail.

        Raises:
            OSError: the file cannot be opened, or the repair cannot be written.
        """
        self.path = path
        self._lock = threading.Lock()
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
        self.torn: TornRecord | None = None
        """The fragment set aside at open, if there was one."""
        self.complete_bytes = 0
        """The bytes of complete lines the file held when opened (before the header or the
        ``torn`` record this open may append): what a reader of it then had read."""
        try:
            size = os.fstat(self._fd).st_size
            if size == 0:
                self.append(LedgerHeader())
                fsync_dir(path.parent)
            else:
                self.torn = self._set_aside_torn_tail()
                self.complete_bytes = size if self.torn is None else self.torn.offset
        except BaseException:
            os.close(self._fd)
            raise

    def _set_aside_torn_tail(self) -> TornRecord | None:
        size = os.fstat(self._fd).st_size
        start = _last_line_start(self._fd, size)
        if start == size:
            return None
        fragment = os.pread(self._fd, size - start, start)
        name = f"ledger.torn-{start}"
        aside = self.path.parent / name
        with aside.open("wb") as fp:
            fp.write(fragment)
            fp.flush()
            os.fsync(fp.fileno())
        fsync_dir(self.path.parent)
        os.ftruncate(self._fd, start)
        os.fsync(self._fd)
        record = TornRecord(offset=start, size_bytes=len(fragment), set_aside=name)
        self.append(record)
        return record

    def append(self, record: BaseModel) -> int:
        """Append ``record`` as one line and fsync it before returning; return its byte offset.

        Raises:
            OSError: the host refused the write (ENOSPC, EDQUOT, ...). The ledger
                is cut back to its size before the call: no part of the line stays.
        """
        line = encode_record(record)
        with self._lock:
            if self._fd < 0:
                raise ValueError(f"ledger {self.path} is closed")
            before = os.fstat(self._fd).st_size
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._fd, view) :]
                os.fsync(self._fd)
            except BaseException:
                # The original error says more; a reader skips an unfinished line anyway.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, before)
                raise
        return before

    async def aappend(self, record: BaseModel) -> int:
        """`append` in a worker thread (fsync off the event loop), shielded from cancellation.

        A record asked for is written whole even when the caller is being
        cancelled (a ``killed`` final record is written while the batch stops).
        """
        with anyio.CancelScope(shield=True):
            offset = await anyio.to_thread.run_sync(self.append, record)
        return offset

    def close(self) -> None:
        """Close the file; idempotent."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_TAIL_CHUNK: Final = 64 * 1024


def _last_line_start(fd: int, size: int) -> int:
    """Offset just after the last ``\\n`` of the file (0 when it has none; ``size`` when it ends
    with one)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start)
        at = chunk.rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    return 0
