"""The plan: the selection of probes and arms a batch runs, their identities, and its order.

The only way in from outside this package. The modules: `_plan` (compose,
dump, load, recompose), `_arms` (what each arm does to a workspace's harness
layer, and its identity; docs/arms.md), `_order` (the batch order), `_plan_text` (the
plan in words), `_sizing` (what `plan` says before spending: the sizing, the projection).
"""

from __future__ import annotations

from ._arms import Removal as Removal
from ._arms import arm_effect as arm_effect
from ._arms import arms_without_effect as arms_without_effect
from ._arms import check_arm as check_arm
from ._arms import is_layer_path as is_layer_path
from ._arms import reads_bytes as reads_bytes
from ._order import ORDER_ALGORITHM as ORDER_ALGORITHM
from ._order import Ordered as Ordered
from ._order import batch_order as batch_order
from ._plan import Plan as Plan
from ._plan import PlanArm as PlanArm
from ._plan import PlanProbe as PlanProbe
from ._plan import compose_plan as compose_plan
from ._plan import dump_plan as dump_plan
from ._plan import load_plan_file as load_plan_file
from ._plan import plan_arm as plan_arm
from ._plan import plan_probe as plan_probe
from ._plan import recompose as recompose
from ._plan import runner_version as runner_version
from ._sizing import BatchFigures as BatchFigures
from ._sizing import projection_lines as projection_lines
from ._sizing import sizing_lines as sizing_lines
