"""Entry point for ``ray job submit``:

    ray job submit --working-dir . -- python -m jobs.run jobs/cc-main.yaml

Inside a Ray job ``RAY_ADDRESS`` is set, so the run joins that cluster.
"""

import sys

from pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
