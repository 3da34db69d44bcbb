"""The provider a batch's sessions talk to, as `open_batch` sees it: a URL, and for a test
double what it can tell about its scripts (docs/provider.md).

`open_batch` never builds a provider itself: the command line hands it a `ProviderStart`
(`campaign.cli._provider.start_provider`), which yields the URL sessions get and, for the
scripted provider, the running double. So nothing under ``campaign/batch`` depends on the
double's package (``demo``), and a test may hand in a provider of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from ._options import BatchOptions


class ScriptedDouble(Protocol):
    """What the command line asks of a running scripted provider (`demo.ScriptedProvider`)."""

    @property
    def url(self) -> str:
        """Its loopback base URL (``http://127.0.0.1:PORT``)."""
        ...

    @property
    def misses(self) -> Mapping[str, int]:
        """Requests no script answered, by reason, and how many."""
        ...

    def script_for(self, task: str) -> object | None:
        """The script whose ``match`` is a phrase of ``task``, or None."""
        ...

    def scripts_for(self, task: str) -> tuple[str, ...]:
        """Every script whose ``match`` is a phrase of ``task``, the one played first."""
        ...


ProviderStart: TypeAlias = Callable[
    ["BatchOptions", Callable[[str], None]],
    AbstractContextManager[tuple[str, ScriptedDouble | None]]]
"""Starts the batch's provider for the block: ``(options, notify) -> (url, double or None)``.

Raises (on entry): ``BatchRefused`` for options it cannot start (``--provider scripted``
without ``--scripts``, scripts that do not load)."""
