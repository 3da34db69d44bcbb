"""The preflight's checks: what this host lacks for a confined session, found before a batch.

The package is named for its checks, not ``preflight``: `sandbox.preflight` is the function
every caller runs (re-exported by `sandbox/__init__`), and a subpackage of the same name
would be hidden behind it (``sandbox.preflight._x`` would resolve on the function).

Owns the checks and the probes that run them:

* `preflight` runs them all and `raise_for` turns a report with a failure into
  `sandbox.PreflightFailed` (``_preflight``);
* the host's checks (bwrap and user namespaces, the session user and its pool, the host's
  layout, the harness mount; `check_session_user`; ``_host_checks``), the kernel's (cgroups,
  landlock, seccomp; ``_kernel_checks``) and the limits' (a real sandbox holds its
  ``open files``, ``tmp`` and ``processes`` limits; `check_limits`; ``_limit_checks``);
* the probe: a tiny command run through the one confined recipe, `sandbox.open_confined`,
  as a session would be (`probe_spec`, ``_probes``), so a check sees what a session would.

What a check answers (`Check`, `Verdict`, `PreflightReport`) is not here: it lives in the
leaf ``sandbox._report``, which imports nothing of sandbox, so the errors that carry a
report (``sandbox._errors``) and the other packages' own checks (`sandbox.storage`'s, the
network preflight) name it without importing the preflight.

Re-exports what `sandbox/__init__` needs. This package sits above the confined recipe
(`sandbox.confined`), `sandbox.users`, `sandbox.cgroup` and `sandbox.storage`; nothing
else in sandbox imports it.
"""

from __future__ import annotations

from ._host_checks import check_session_user as check_session_user
from ._limit_checks import check_limits as check_limits
from ._preflight import preflight as preflight
from ._preflight import raise_for as raise_for
from ._probes import probe_spec as probe_spec
