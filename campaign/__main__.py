"""``python -m campaign``: the same as the ``headwater-campaign`` console script."""

from ._cli import main

main()
