"""An example recipe of a team's own components for curate, written only against its public contract.

Each module is one component, plugged in by config (``use: my_recipe.<module>:<Class>``) or through
``pipeline.api.run``; none imports curate. Put the folder that holds ``my_recipe/`` on PYTHONPATH (a cluster:
Ray's ``runtime_env`` ``py_modules``). examples/my_recipe.yaml runs all of them.
"""
