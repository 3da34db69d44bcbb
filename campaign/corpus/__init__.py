"""Reading a corpus: its files and their signatures, probe.yml, the probes' Markdown, its notes.

The only way in from outside this package (`load_corpus` and what it returns,
the corpus's fixed paths, the allowed-tools check, the front matter's loader).
The modules: `_corpus` (the load), `_corpus_files` (the walk, `FileSignature`,
the large-file bounds), `_markdown` (front matter, the task section),
`_yamlload` (the YAML loader), `_schema` (probe.yml and front matter as types),
`_tools` (allowed tools), `_reread` (front matter read again), `_corpus_notes`
and `_largefiles` (what ``plan`` notes of a corpus).
"""

from __future__ import annotations

from ._corpus import HEADWATER as HEADWATER
from ._corpus import PROBE_YML as PROBE_YML
from ._corpus import SHELF as SHELF
from ._corpus import Corpus as Corpus
from ._corpus import Probe as Probe
from ._corpus import Tier as Tier
from ._corpus import TierConfig as TierConfig
from ._corpus import load_corpus as load_corpus
from ._corpus import split_lines as split_lines
from ._corpus_files import CHUNK_BYTES as CHUNK_BYTES
from ._corpus_files import LARGE_FILE_BYTES as LARGE_FILE_BYTES
from ._corpus_files import FileSignature as FileSignature
from ._corpus_notes import corpus_notes as corpus_notes
from ._largefiles import file_size as file_size
from ._largefiles import large_file_notes as large_file_notes
from ._reread import read_front as read_front
from ._schema import DIGEST_PATTERN as DIGEST_PATTERN
from ._schema import ID_PATTERN as ID_PATTERN
from ._schema import check_relpath as check_relpath
from ._schema import describe_validation as describe_validation
from ._tools import PINNED_HARNESS_VERSION as PINNED_HARNESS_VERSION
from ._tools import check_allowed_tools as check_allowed_tools
from ._yamlload import describe_yaml_error as describe_yaml_error
from ._yamlload import load_yaml as load_yaml
