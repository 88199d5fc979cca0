"""The run: config, plan, phases, Ray, the card.

Every process that runs pipeline code imports this package first (the driver, and each Ray worker when it
unpickles a task), so the per-process set-up lives here.
"""

from core.arrow_pandas import defer_pandas

defer_pandas()  # pyarrow would import pandas (~54 MB, ~0.5 s) in every process for nothing
