"""Fixtures of the gateway's tests: a loopback provider, a recording gate, both backends."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import pytest

from sandbox._config import Credentials
from sandbox.gateway import ProviderRequest

from .provider import LoopbackProvider

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

REAL_KEY = "sk-ant-api03-CANARY-real-key-never-in-a-sandbox-0123456789"
"""The host's credential in these tests: it must arrive upstream and nowhere else."""


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The gateway is backend-neutral: trio (the product's) and asyncio (STYLE §18)."""
    return str(request.param)


@pytest.fixture
def provider() -> Iterator[LoopbackProvider]:
    served = LoopbackProvider()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def api_key() -> Credentials:
    return Credentials(credentials_file=None, api_key_env="TEST_KEY", api_key=REAL_KEY)


class Gate:
    """A `SpendGate` that records every row and refuses while ``refuse`` is set."""

    def __init__(self) -> None:
        self.rows: list[ProviderRequest] = []
        self.refuse: str | None = None
        self.on_row: Callable[[], None] = lambda: None

    def refusal(self) -> str | None:
        return self.refuse

    async def observed(self, request: ProviderRequest) -> None:
        await anyio.lowlevel.checkpoint()  # as the campaign's does (it writes the ledger)
        self.rows.append(request)
        self.on_row()


@pytest.fixture
def gate() -> Gate:
    return Gate()
