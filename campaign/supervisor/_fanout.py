"""The supervisor: a batch's sessions fanned out under a concurrency limit, retried, budgeted.

A bounded channel of session specs (capacity = concurrency) feeds exactly
``concurrency`` workers; outcomes go to the ledger (through the journal), never
to a list, so memory is flat in the number of sessions (docs/bench.md, targets:
scale). Each worker runs a session's attempts: a retryable state is tried
again, at most ``retries`` further times in this invocation, after an
exponential backoff with jitter; refusals never retry, and an attempt ended by
the runner stopping does not count. Before every attempt the budgets are
asked (`Budgets`), over the batch's realized spend (`BatchSpend`: every
attempt's cost and the priced provider requests of the sessions in flight, which
their gateways also hold to ``--max-cost-cents``); once one says stop, no session
starts and those in flight finish, except at a ``--hard-wall``: at ``--max-wall``
those in flight are cancelled as a signal cancels them (written ``killed``, exit 3).
SIGINT/SIGTERM stop the batch: no session starts, those in flight are
cancelled (the driver reaps each within its bounded grace and the attempt is
written ``killed``), transcripts are rendered, and the outcome names the
signal; a second signal kills what is still running at once.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from campaign.batch import BudgetStopRecord, StoppedRecord, StopReason
from recorder import is_recorded
from sandbox import LiveChildren

from ._budget import Budgets, BudgetVerdict
from ._heap import TRIM_EVERY_S, give_back_heap
from ._progress import BatchOutcome, InFlight, LiveStatistics, NoView, View
from ._session import AttemptRunner, BatchContext, run_attempt
from ._spend import BatchSpend
from ._writes import HostWriteRefused, refused_write, write_remedy

if TYPE_CHECKING:
    from campaign.batch import Journal, SessionKey

    from ._spec import SessionSpec

RENDER_EVERY_S: Final = 5.0
"""Least seconds between two renders of the transcripts while a batch runs."""
RENDER_SHARE: Final = 10.0
"""Renders are spaced at least this many times their own duration (a large arm renders less
often, so rendering never takes more than a tenth of the runner's time)."""
BACKOFF_CAP_S: Final = 300.0
"""The longest wait before a retry, seconds."""
VIEW_EVERY_S: Final = 0.5
"""Seconds between two redraws of the live view."""


@dataclass(frozen=True, slots=True)
class RunLimits:
    """How the supervisor runs one invocation's sessions."""

    concurrency: int
    retries: int
    """Further attempts per session in this invocation, for retryable states."""
    backoff_s: float
    """Wait before the first retry of a session, seconds; doubled per retry, jittered."""
    budgets: Budgets = field(default_factory=Budgets)


class Supervisor:
    """Runs sessions of one open batch; one `run` per invocation.

    Args:
        ctx: What every session shares.
        journal: The batch's ledger, fold and transcripts.
        limits: Concurrency, retries, backoff, budgets.
        view: Told of progress (nothing by default).
        done_detail: The ``stopped`` record's detail when the invocation ends done
            (``record``, which runs one session, says so); by default it counts the
            batch's outstanding sessions.
        run_attempt: Runs one attempt and writes its two ledger records (the real
            `run_attempt` by default; a test passes a fake).
    """

    def __init__(self, ctx: BatchContext, journal: Journal, limits: RunLimits,
                 view: View | None = None, *, done_detail: str | None = None,
                 run_attempt: AttemptRunner = run_attempt) -> None:
        self.ctx = ctx
        self._run_attempt = run_attempt
        self._done_text = done_detail
        self.journal = journal
        self.limits = limits
        self.view: View = view or NoView()
        self._in_flight: dict[SessionKey, InFlight] = {}
        self._started_s = time.monotonic()
        self._finals = 0
        self._retries = 0
        self._longest_s: float | None = None
        self._stop_reason: StopReason | None = None
        self._budget_hit = False
        self._write_refused = False
        self._stop_detail = ""
        self._signal: int | None = None
        self._wall_cancelled = False
        """``--hard-wall`` cancelled the sessions in flight at ``--max-wall``."""
        self._remedy: str | None = None
        self._login_failures = 0
        self._login_failure: str | None = None
        """The first login the gateway could not use this invocation (the ending says it)."""
        """What the user does about a refused write (free space, make it writable)."""
        self._work: anyio.CancelScope | None = None
        self._rng = random.Random()
        self.spend = BatchSpend(journal.fold, max_cost_cents=limits.budgets.max_cost_cents)
        """The batch's realized spend, shared by every attempt's provider gateway."""
        self.children = LiveChildren()
        """Every child its sessions spawned that is not reaped yet (what a second signal
        kills); current while `run` runs, so each spawn under it joins."""

    # -- statistics -------------------------------------------------------------------------

    def statistics(self) -> LiveStatistics:
        """A frozen snapshot for the live view (never the supervisor's internals)."""
        return LiveStatistics(
            batch=self.journal.fold.statistics(), in_flight=tuple(self._in_flight.values()),
            elapsed_s=time.monotonic() - self._started_s, finals_now=self._finals,
            retries_now=self._retries, outstanding=len(self.journal.fold.outstanding()),
            stopping=self._stop_detail or None,
            max_cost_cents=self.limits.budgets.max_cost_cents,
            max_wall_s=self.limits.budgets.max_wall_s,
        )

    # -- the run ----------------------------------------------------------------------------

    async def run(self, specs: Iterable[SessionSpec], *,
                  watch_signals: bool = True) -> BatchOutcome:
        """Run ``specs`` (lazily, in their order) to the end, or until a stop.

        **Cancellation:** from outside, as a signal would: sessions in flight
        are reaped and written ``killed``, the transcripts rendered (shielded),
        then the cancellation propagates. Signals are handled here when
        ``watch_signals`` (the outcome then names the signal).

        Raises:
            Exception: only bugs; states, refusals, budgets and refused writes are outcomes.
        """
        with self.children.tracking():
            return await self._run(specs, watch_signals=watch_signals)

    async def _run(self, specs: Iterable[SessionSpec], *, watch_signals: bool) -> BatchOutcome:
        self._started_s = time.monotonic()
        try:
            async with anyio.create_task_group() as outer:
                if watch_signals:
                    outer.start_soon(self._watch_signals)
                outer.start_soon(self._render_loop)
                outer.start_soon(self._view_loop)
                outer.start_soon(self._heap_loop)
                budgets = self.limits.budgets
                if budgets.hard_wall and budgets.max_wall_s is not None:
                    outer.start_soon(self._hard_wall, budgets.max_wall_s)
                with anyio.CancelScope() as self._work:
                    await self._fan_out(specs)
                outer.cancel_scope.cancel()
        except BaseException as exc:
            if self._stop_reason is None and _first_error(exc) is not None:
                # A bug: the stopped record says so, never "done".
                self._stop_reason = "error"
                self._stop_detail = ("the runner stopped on an unexpected error (a bug): "
                                     f"{_first_error(exc)!r}")
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish()
        return self._outcome()

    async def _fan_out(self, specs: Iterable[SessionSpec]) -> None:
        send, receive = anyio.create_memory_object_stream["SessionSpec"](self.limits.concurrency)
        async with anyio.create_task_group() as tg:
            for _ in range(self.limits.concurrency):
                tg.start_soon(self._worker, receive.clone())
            receive.close()
            async with send:
                for spec in specs:
                    if self._stop_reason is not None:
                        break
                    await send.send(spec)

    async def _worker(self, receive: MemoryObjectReceiveStream[SessionSpec]) -> None:
        async with receive:
            async for spec in receive:
                if self._stop_reason is None:
                    await self._session(spec)

    async def _session(self, spec: SessionSpec) -> None:
        retries_here = 0
        while self._stop_reason is None:
            if not await self._budget_allows():
                return
            key = spec.key
            log = self.journal.fold.sessions.get(key)
            attempt = (log.attempts if log else 0) + 1
            self._in_flight[key] = InFlight(key, attempt, time.monotonic())
            try:
                record = await self._run_attempt(spec, attempt, self.ctx, self.journal,
                                                 why_stopped=self._why_stopped,
                                                 spend=self.spend)
            except HostWriteRefused as exc:
                self._refused(exc.what, exc.error)
                return
            finally:
                flight = self._in_flight.pop(key)
                took = time.monotonic() - flight.started_s
                self._longest_s = max(self._longest_s or 0.0, took)
            self._finals += 1
            if record.gateway is not None and record.gateway.login_failure is not None:
                self._login_failures += 1
                self._login_failure = self._login_failure or record.gateway.login_failure
            self.view.attempt_ended(record, self.statistics())
            if record.state == "budget-stopped":
                # Its gateway refused it for the cost budget: the batch's realized spend has
                # reached it, so no session starts (a budget stop, exit 3; resume reruns it).
                await self._budget_allows()
                return
            if is_recorded(record.state) or not record.retryable or not record.counts:
                return
            if retries_here >= self.limits.retries or self._stop_reason is not None:
                return
            retries_here += 1
            self._retries += 1
            wait_s = self._backoff(retries_here)
            self.view.note(f"{key.arm} {key.probe} {key.session}: {record.state}, worth another "
                           f"attempt: retry {retries_here} of {self.limits.retries} in "
                           f"{wait_s:.0f} s")
            await anyio.sleep(wait_s)

    def _backoff(self, retry: int) -> float:
        """Exponential, capped, with jitter (half to all of the step), so retries spread out."""
        step = min(BACKOFF_CAP_S, self.limits.backoff_s * 2.0 ** (retry - 1))
        return step * (0.5 + self._rng.random() / 2)

    async def _budget_allows(self) -> bool:
        fold = self.journal.fold
        verdict = self.limits.budgets.check(
            spent_usd=self.spend.usd(), largest_attempt_usd=fold.largest_attempt_usd,
            in_flight=len(self._in_flight), elapsed_s=time.monotonic() - self._started_s,
            longest_session_s=self._longest_s)
        if verdict is None:
            return True
        if not self._budget_hit:
            self._budget_hit = True
        if self._stop_reason is None:
            self._stop_reason, self._stop_detail = "budget", verdict.describe()
            cancel = self.limits.budgets.hard_wall
            self.view.note(f"budget: {verdict.describe()}; no further session starts, "
                           + ("those in flight are cancelled at the wall (--hard-wall)"
                              if cancel and verdict.budget == "wall" else "those in flight "
                              "finish"))
            await self._record_budget_stop(verdict)
        return False

    async def _record_budget_stop(self, verdict: BudgetVerdict) -> None:
        try:
            await self.journal.record(BudgetStopRecord(
                invocation=self.ctx.invocation, budget=verdict.budget, limit=verdict.limit,
                used=verdict.used, projection=verdict.projection,
                in_flight=len(self._in_flight)))
        except OSError as exc:
            if not refused_write(exc):
                raise
            self._refused("the ledger", exc)

    async def _hard_wall(self, max_wall_s: float) -> None:
        """``--hard-wall``: at ``max_wall_s`` after the invocation began, stop as a budget
        does (exit 3) and cancel the sessions still running: each is written ``killed``
        with ``counts: false`` (no outcome, no retry used; resume reruns it), as a signal's
        are (docs/batch.md, "Budgets")."""
        await anyio.sleep(max(0.0, self._started_s + max_wall_s - time.monotonic()))
        if self._stop_reason not in (None, "budget"):
            return  # a signal or a refused write is already ending the sessions
        self._wall_cancelled = True
        elapsed_s = time.monotonic() - self._started_s
        verdict = BudgetVerdict("wall", max_wall_s, elapsed_s, 0.0)
        detail = (f"the wall-clock budget of {max_wall_s:g} s is spent: {elapsed_s:.0f} s "
                  "elapsed; the sessions still running were cancelled (--hard-wall)")
        first = not self._budget_hit
        self._budget_hit = True
        self._stop_reason, self._stop_detail = "budget", detail
        self.view.note(f"budget: {detail}: each is written killed, and resume reruns it")
        if first:  # before the cancellation: the ledger says why before the killed records
            await self._record_budget_stop(verdict)
        if self._work is not None:
            self._work.cancel()

    def _why_stopped(self) -> str:
        """Why sessions in flight are being ended, in words (their ``killed`` reason)."""
        if self._write_refused:
            return "the host refused a write"
        if self._wall_cancelled and self._signal is None:
            return "the wall-clock budget was reached, --hard-wall"
        return "a signal" if self._signal is not None else "it was cancelled"

    def _refused(self, what: str, exc: OSError) -> None:
        """The host refused a write of ``what``: stop, cancelling what is in flight (exit 6)."""
        if self._remedy is None:
            self._remedy = write_remedy(exc)
        self._stop("write-refused", f"the host refused a write ({what}): {exc.strerror or exc}")

    def _stop(self, reason: StopReason, detail: str) -> None:
        """Stop starting sessions; for a signal or a refused write, cancel those in flight."""
        if reason == "write-refused":
            self._write_refused = True
        if self._stop_reason in (None, "budget"):
            self._stop_reason, self._stop_detail = reason, detail
        if reason != "budget" and self._work is not None:
            self._work.cancel()

    async def _watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                if self._signal is None:
                    self._signal = int(signum)
                    self._stop("signal", f"stopped by {signal.Signals(signum).name}")
                    self.view.note(f"{signal.Signals(signum).name}: stopping; sessions in flight "
                                   "are ended and written killed (a second signal ends them at "
                                   "once)")
                else:
                    self.view.note("second signal: ending every session now")
                    self._escalate()

    def _escalate(self) -> None:
        """A second signal: end every session still running now, without the grace."""
        self.children.kill_now()

    async def _render_loop(self) -> None:
        while True:
            await anyio.sleep(max(RENDER_EVERY_S, RENDER_SHARE * self.journal.last_render_s))
            try:
                await self.journal.render()
            except OSError as exc:
                if not refused_write(exc):
                    raise
                self._refused("a transcript", exc)
                return

    async def _heap_loop(self) -> None:
        """Give the heap's free pages back every `TRIM_EVERY_S` (off the loop's thread), so
        the runner's RSS follows what it holds, not what its sessions once held."""
        while True:
            if not await anyio.to_thread.run_sync(give_back_heap):
                return  # no malloc_trim in this C library
            await anyio.sleep(TRIM_EVERY_S)

    async def _view_loop(self) -> None:
        while True:
            self.view.update(self.statistics(), time.monotonic())
            await anyio.sleep(VIEW_EVERY_S)

    async def _finish(self) -> None:
        """Shielded end of an invocation: render every arm, write the ``stopped`` record.

        No attempt of this invocation runs any more: one the fold still holds running got no
        final record (its write was refused, or it ended by a bug) and is interrupted, as the
        next reader of the ledger will find it (`BatchFold.runner_gone`), so the closing
        table, the transcripts and the ``stopped`` record count it so, never running.
        """
        self.journal.fold.runner_gone()
        try:
            await self.journal.render(self.journal.arms)
        except OSError as exc:
            if not refused_write(exc):
                raise
            self._refused("a transcript", exc)
        reason = self._stop_reason or "done"
        detail = self._stop_detail or self._done_detail()
        try:
            await self.journal.record(StoppedRecord(
                invocation=self.ctx.invocation, reason=reason, detail=detail,
                outstanding=len(self.journal.fold.outstanding())))
        except OSError as exc:
            if not refused_write(exc):
                raise
            self._write_refused = True
            self._remedy = self._remedy or write_remedy(exc)
            if self._stop_reason is None or self._stop_reason == "budget":
                self._stop_reason = "write-refused"
                self._stop_detail = f"the host refused a write (the ledger): {exc.strerror or exc}"
        self.view.update(self.statistics(), time.monotonic())

    def _done_detail(self) -> str:
        """What a ``done`` invocation did, outstanding sessions included (docs/batch.md)."""
        if self._done_text is not None:
            return self._done_text
        left = len(self.journal.fold.outstanding())
        if not left:
            return "every session reached a final state and is finished"
        return (f"every session of this invocation reached a final state; {left} "
                f"{'is' if left == 1 else 'are'} still outstanding (the last attempt ended in "
                "a state worth another attempt and this invocation's retries are spent): "
                "resume runs them again")

    def _outcome(self) -> BatchOutcome:
        fold = self.journal.fold
        recorded = sum(c.recorded for c in fold.arms.values())
        return BatchOutcome(
            stop=self._stop_reason or "done",
            detail=self._stop_detail or self._done_detail(),
            signal=self._signal, outstanding=len(fold.outstanding()), recorded=recorded,
            budget_stopped=self._budget_hit, write_refused=self._write_refused,
            remedy=self._remedy or "", login_failures=self._login_failures,
            login_failure=self._login_failure)


def _first_error(exc: BaseException) -> BaseException | None:
    """The first exception in ``exc`` (groups opened) that is not a cancellation, or None."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _first_error(inner)) is not None:
                return found
        return None
    return None if isinstance(exc, cancelled) else exc
