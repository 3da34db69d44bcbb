"""``python -m campaign``: the same as the ``headwater-campaign`` console script."""

from .cli import main

main()
