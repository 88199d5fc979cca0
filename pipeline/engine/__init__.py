"""The engine: the one thing that runs phases, from their declarations (pipeline.phase).

- ``units``: every unit of every phase and its fingerprint, from what it reads and the settings its
  components declare (``settings``);
- ``markers``: completion markers under ``_done/<phase>/[<step>/]``;
- ``worker``: the one worker loop of every map phase (a unit's batches through its stages to its sinks);
- ``steps``: a phase of declared steps (map, shuffle, final), resumed by the markers;
- ``run``: one phase, its units to do, its summary.

No phase owns its execution, its fingerprints or its resume.
"""
