"""A pipe that holds a payload for a child to read before it starts its work.

For data a child reads on an fd at its start (bwrap's ``--args FD``, ``--seccomp
FD``): never on its command line, which every process of the host can read.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Final

from ._errors import SpawnFailed

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["MAX_PAYLOAD_BYTES", "payload_pipe"]

MAX_PAYLOAD_BYTES: Final = 60 * 1024
"""Largest `payload_pipe` payload, in bytes. It is written whole before the child starts,
so it must fit a pipe buffer (64 KiB on Linux, pipe(7))."""


@contextlib.contextmanager
def payload_pipe(payload: bytes) -> Iterator[int]:
    """A pipe's read end holding ``payload`` then EOF (write end closed); closed on exit.

    For data a child reads on an fd before it starts its work (bwrap's
    ``--args FD``, ``--seccomp FD``): pass the fd in ``pass_fds``; the payload
    is written whole now, without blocking, so it must fit a pipe buffer.

    Raises:
        ValueError: ``payload`` is over `MAX_PAYLOAD_BYTES`.
        SpawnFailed: the pipe took less than the payload (a host with smaller pipes).
    """
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"the payload is {len(payload)} bytes, over the "
                         f"{MAX_PAYLOAD_BYTES}-byte limit of one pipe buffer")  # fmt: skip
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(write_fd, False)  # never block the loop; an empty pipe takes 64 KiB
        view = memoryview(payload)
        try:
            while view:
                view = view[os.write(write_fd, view) :]
        except OSError as exc:  # BlockingIOError: a pipe smaller than usual (pipe(7) limits)
            reason = f"cannot write {len(payload)} bytes: {exc}"
            raise SpawnFailed("a payload pipe", reason) from exc
        os.close(write_fd)
        write_fd = -1
        yield read_fd
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
