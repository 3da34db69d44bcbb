"""Confinement of one harness session under bubblewrap (RC-02, RC-03, RC-05).

See docs/confinement.md and docs/internals.md. Knows nothing of stream-json.
Every child the runner starts goes through `spawn`/`open_child`; every sandbox
through `open_confined`.
"""

from __future__ import annotations

from ._argv import CONFIG_MOUNT as CONFIG_MOUNT
from ._argv import HARNESS_MOUNT as HARNESS_MOUNT
from ._argv import LOG_MOUNT as LOG_MOUNT
from ._argv import Confinement as Confinement
from ._argv import bwrap_argv as bwrap_argv
from ._argv import bwrap_options as bwrap_options
from ._argv import check_workspace_path as check_workspace_path
from ._argv import default_workspace_path as default_workspace_path
from ._capture import Run as Run
from ._capture import capture as capture
from ._capture import run_bounded as run_bounded
from ._capture import run_bounded_sync as run_bounded_sync
from ._cgroup import find_cgroups as find_cgroups
from ._cgroup import sweep_cgroups as sweep_cgroups
from ._config import CONFIG_ROOT as CONFIG_ROOT
from ._config import Credentials as Credentials
from ._config import host_credentials as host_credentials
from ._config import session_config_dir as session_config_dir
from ._config import sweep_config_root as sweep_config_root
from ._confined import ConfinedDirs as ConfinedDirs
from ._confined import ConfinedSpec as ConfinedSpec
from ._confined import Sandbox as Sandbox
from ._confined import open_confined as open_confined
from ._env import args_payload as args_payload
from ._env import session_environment as session_environment
from ._env import setenv_payload as setenv_payload
from ._errors import ConfinementUnavailable as ConfinementUnavailable
from ._errors import ContainmentUnavailable as ContainmentUnavailable
from ._errors import CredentialsMissing as CredentialsMissing
from ._errors import PoolBusy as PoolBusy
from ._errors import PreflightFailed as PreflightFailed
from ._errors import SandboxError as SandboxError
from ._errors import SessionUserUnusable as SessionUserUnusable
from ._errors import SpawnFailed as SpawnFailed
from ._layout import HostLayout as HostLayout
from ._layout import measure_host_layout as measure_host_layout
from ._lease import LEASE_ROOT as LEASE_ROOT
from ._lease import hold_lease as hold_lease
from ._lease import lease_user as lease_user
from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._limits import LimitHit as LimitHit
from ._limits import Limits as Limits
from ._pool import MAX_POOL_USERS as MAX_POOL_USERS
from ._pool import SessionPool as SessionPool
from ._pool import ensure_session_pool as ensure_session_pool
from ._pool import session_pool as session_pool
from ._pool import session_user as session_user
from ._preflight import Check as Check
from ._preflight import PreflightReport as PreflightReport
from ._preflight import Verdict as Verdict
from ._preflight import preflight as preflight
from ._preflight import raise_for as raise_for
from ._privileges import SESSION_USER as SESSION_USER
from ._privileges import SessionUser as SessionUser
from ._privileges import drop_argv as drop_argv
from ._privileges import hand_over as hand_over
from ._process import Child as Child
from ._process import open_child as open_child
from ._process import run_sync as run_sync
from ._process import spawn as spawn
from ._scratch import sweep_killed_runners as sweep_killed_runners
