"""The harness census: what a Claude Code release prints, per line kind (docs/census.md).

A maintainer tool, like ``bench/``: not part of the product's command line, and nothing of
``campaign``, ``recorder``, ``sandbox`` or ``demo`` imports it (an import contract). It
replays the recorded situations (tests/fixtures/census/situations/) through a release
under the product's own sandbox (`sandbox.open_confined`) against the scripted provider
(`demo.ScriptedProvider`), lists per line kind the keys, subtypes and members it printed
(`take_census`), compares two censuses (`diff_census`) and names what the recorder does
with each key (`recorder_keys`). ``python -m census RELEASE`` does all of it
(`census._cli`).
"""

from __future__ import annotations

from ._census import ALL as ALL
from ._census import INIT_KIND as INIT_KIND
from ._census import NOT_AN_OBJECT as NOT_AN_OBJECT
from ._census import dump_census as dump_census
from ._census import json_type as json_type
from ._census import line_kind as line_kind
from ._census import take_census as take_census
from ._cli import build_parser as build_parser
from ._cli import main as main
from ._cli import printed_versions as printed_versions
from ._cli import unsignalled as unsignalled
from ._diff import KindDiff as KindDiff
from ._diff import diff_census as diff_census
from ._install import InstallFailed as InstallFailed
from ._install import install_release as install_release
from ._printout import print_census as print_census
from ._reads import NOT_DECIDED as NOT_DECIDED
from ._reads import NOT_READ as NOT_READ
from ._reads import READ as READ
from ._reads import RecorderKeys as RecorderKeys
from ._reads import recorder_keys as recorder_keys
from ._replays import replay_all as replay_all
from ._replays import write_captures as write_captures
from ._runner import WORKSPACE_PATH as WORKSPACE_PATH
from ._runner import HostRecipe as HostRecipe
from ._runner import Replay as Replay
from ._runner import harness_argv as harness_argv
from ._runner import replay as replay
from ._runner import settle_host as settle_host
from ._situation import LoadedSituation as LoadedSituation
from ._situation import Situation as Situation
from ._situation import SituationError as SituationError
from ._situation import load_situation as load_situation
from ._situation import load_situations as load_situations
