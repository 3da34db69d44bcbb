"""Headless Chromium over its DevTools pipe, for the page's test: no driver, no websocket.

Chromium started with ``--remote-debugging-pipe`` reads DevTools protocol
commands from fd 3 and writes replies and events to fd 4, each a JSON text
ended by a NUL byte. `Browser` starts it that way (a ``bash`` ``exec``
puts our pipe ends on fds 3 and 4), sends commands, keeps every event, and
always reaps the process: ``Browser.close``, then SIGKILL to its whole
process group, each wait bounded. The flags are those known to work as root
on these machines (no sandbox, no GPU, no QUIC, no background or first-run
networking), with a fresh profile directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

FLAGS: Final = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                "--remote-debugging-pipe")
CALL_TIMEOUT_S: Final = 60.0
"""A command unanswered this long fails the test (the machine is shared; Chromium is slow)."""
GRACE_S: Final = 5.0


class BrowserError(Exception):
    """Chromium answered a command with an error, died, or did not answer in time."""


class Browser:
    """One headless Chromium; use as a context manager (module docstring).

    Args:
        executable: The chromium binary.
        profile: A fresh, empty directory for ``--user-data-dir``.
        log: Where Chromium's stderr goes.
    """

    def __init__(self, executable: str, profile: Path, log: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # bash, not dash: dash takes only one-digit descriptors in a redirection.
        script = (f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} '
                  f'{to_chrome_r}<&- {from_chrome_w}>&-')
        with log.open("wb") as err:
            self._process = subprocess.Popen(
                ["/bin/bash", "-c", script, executable, *FLAGS, f"--user-data-dir={profile}",
                 "about:blank"],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                pass_fds=(to_chrome_r, from_chrome_w), start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept.

        Raises:
            BrowserError: an error reply, a dead browser, or no reply in `CALL_TIMEOUT_S`.
        """
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            reply = self._receive(deadline, what=method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, *, session: str | None = None) -> dict[str, Any]:
        """The first event ``method`` (of ``session``), waiting for it if not seen yet."""
        deadline = time.monotonic() + CALL_TIMEOUT_S
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event["method"] == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            message = self._receive(deadline, what=method)
            if "method" in message:
                self.events.append(message)

    def _receive(self, deadline: float, *, what: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer to {what} in {CALL_TIMEOUT_S:g} s")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise BrowserError(f"chromium closed its pipe (exit "
                                       f"{self._process.poll()}) while {what} was pending")
                self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        decoded: dict[str, Any] = json.loads(text)
        return decoded

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if self._process.poll() is None:
                os.write(self._to_chrome, json.dumps(
                    {"id": 0, "method": "Browser.close", "params": {}}).encode() + b"\0")
                self._process.wait(timeout=GRACE_S)
        except (OSError, subprocess.TimeoutExpired):
            pass  # ended below
        finally:
            # Chromium's helpers (zygote, renderer) share its process group: end them all.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=GRACE_S)
            os.close(self._to_chrome)
            os.close(self._from_chrome)
