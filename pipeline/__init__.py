"""The run: config, plan, phases, Ray, the card.

Every process that runs pipeline code imports this package first (the driver, and each Ray worker when it
unpickles a task), so the per-process set-up lives here.
"""

from core.arrow_allocator import prefer_system_allocator
from core.arrow_pandas import defer_pandas

prefer_system_allocator()  # before anything imports pyarrow: Arrow reads the choice once
defer_pandas()  # pyarrow would import pandas (~54 MB, ~0.5 s) in every process for nothing
