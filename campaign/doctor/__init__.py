"""``doctor``: the checks, computed here, printed by the command line (`campaign.cli`)."""

from __future__ import annotations

from ._checks import DOCTOR_LEASE_WAIT_S as DOCTOR_LEASE_WAIT_S
from ._checks import check_batch_root as check_batch_root
from ._checks import check_credentials as check_credentials
from ._checks import check_gateway as check_gateway
from ._checks import check_harness_release as check_harness_release
from ._checks import doctor_checks as doctor_checks
