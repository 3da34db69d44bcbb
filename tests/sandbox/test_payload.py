"""Payload pipes (sandbox/_payload.py): the bytes, then EOF; never more than one pipe buffer.

Rule (the module's): a child reads its payload on an fd before it starts its
work, so the payload is written whole before the spawn and must fit one pipe
buffer (pipe(7)); a larger one is refused, never half written.
"""

from __future__ import annotations

import pytest

from sandbox._payload import MAX_PAYLOAD_BYTES, payload_pipe
from sandbox._process import Child, open_child
from tests.conftest import python_child

pytestmark = pytest.mark.anyio


async def output(child: Child) -> bytes:
    chunks = []
    while chunk := await child.read("stdout"):
        chunks.append(chunk)
    return b"".join(chunks)


async def test_a_payload_pipe_holds_the_bytes_then_eof() -> None:
    payload = b"--setenv\0ANTHROPIC_API_KEY\0sk-secret\0" * 100
    code = ("import os, sys\nfd = int(sys.argv[1]); chunks = []\n"
            "while chunk := os.read(fd, 4096):\n    chunks.append(chunk)\n"
            "print(b''.join(chunks).hex())")  # fmt: skip
    with payload_pipe(payload) as fd:
        async with open_child([*python_child(code), str(fd)], pass_fds=(fd,)) as child:
            assert await output(child) == payload.hex().encode() + b"\n"


def test_a_payload_over_one_pipe_buffer_is_refused() -> None:
    too_big = payload_pipe(b"x" * (MAX_PAYLOAD_BYTES + 1))
    with pytest.raises(ValueError, match=f"{MAX_PAYLOAD_BYTES + 1} bytes"):
        too_big.__enter__()
