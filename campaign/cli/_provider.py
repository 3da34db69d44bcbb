"""The provider a command's sessions talk to, started by the command line (docs/provider.md).

The one place the product wires the scripted provider (``demo``, the loopback test double that
plays fixed scripts) into a batch: `start_provider` is the `ProviderStart` that
``run``/``demo``/``resume``/``record`` hand to `campaign.batch._open.open_batch`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from campaign.batch import BatchRefused

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from campaign.batch import BatchOptions, ScriptedDouble
    from demo import Script

PUBLIC_API_URL: Final = "https://api.anthropic.com"
"""Where sessions go without ``--provider-url``: the Anthropic Messages API."""


def loaded_scripts(options: BatchOptions) -> list[Script]:
    """The scripted provider's scripts ``--scripts DIR`` names, loaded and checked.

    ``run`` and ``demo`` call this before a new batch's directory is made, so a script that
    does not load refuses the command with nothing left behind (``resume``'s batch exists
    already, and what is wrong with it is said first); `start_provider` loads them again for
    the double it starts.

    Raises:
        BatchRefused: no ``--scripts`` was given, or a script file does not load (its
            message names the file and the rule; exit 2).
    """
    from demo import load_scripts

    if not options.scripts:
        raise BatchRefused("--provider scripted needs --scripts DIR (the provider's scripts)")
    try:
        return load_scripts(Path(options.scripts))
    except (OSError, ValueError) as exc:
        raise BatchRefused(f"--scripts {options.scripts}: {exc}") from exc


@contextlib.contextmanager
def start_provider(options: BatchOptions, notify: Callable[[str], None]
                   ) -> Iterator[tuple[str, ScriptedDouble | None]]:
    """The batch's provider for the block: ``(url, the scripted double or None)``.

    A real provider is only a URL (``--provider-url``, else `PUBLIC_API_URL`). The scripted
    one is started on loopback with ``--scripts DIR``'s scripts, and with the request log
    its tests set (``HEADWATER_SCRIPTED_REQUEST_LOG``; ignored, with a warning, for a real
    provider, whose requests are never logged).

    Raises:
        BatchRefused: ``--provider scripted`` without ``--scripts``, or scripts that do not
            load (exit 2).
    """
    from demo import REQUEST_LOG_ENV

    request_log = os.environ.get(REQUEST_LOG_ENV)
    if options.provider != "scripted":
        if request_log:  # a test instrument: a real provider's requests are never logged
            notify(f"warning: {REQUEST_LOG_ENV} is ignored: the provider is not scripted")
        yield options.provider_url or PUBLIC_API_URL, None
        return
    from demo import ScriptedProvider

    scripts = loaded_scripts(options)
    log = Path(request_log).absolute() if request_log else None
    with ScriptedProvider(scripts, request_log=log) as provider:
        yield provider.url, provider
