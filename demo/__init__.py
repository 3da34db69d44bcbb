"""The demo's and the tests' doubles: the scripted provider and the bundled example corpus.

Not part of the product's measurement: the scripted provider is a loopback
test double of the Anthropic Messages API (docs/provider.md), and the example
corpus is what ``headwater-campaign demo`` runs. ``campaign`` starts the
provider only for ``demo`` and ``run --provider scripted``. `SituationSpec` is the
format of the census's recorded situations (tests/fixtures/census/situations/), whose
scripts are this provider's.
"""

from __future__ import annotations

import contextlib
import importlib.resources
from collections.abc import Iterator
from pathlib import Path

from ._reqlog import REQUEST_LOG_ENV as REQUEST_LOG_ENV
from ._scripts import Script as Script
from ._scripts import ScriptError as ScriptError
from ._scripts import load_scripts as load_scripts
from ._server import ScriptedProvider as ScriptedProvider
from ._situations import SITUATION_FILE as SITUATION_FILE
from ._situations import SituationSpec as SituationSpec
from ._situations import read_situation as read_situation


@contextlib.contextmanager
def example_paths() -> Iterator[tuple[Path, Path]]:
    """The bundled example corpus and the demo's provider scripts, as real paths."""
    root = importlib.resources.files("demo") / "example"
    with importlib.resources.as_file(root) as path:
        yield Path(path) / "corpus", Path(path) / "scripts"
