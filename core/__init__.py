"""The bottom layer: what the pipeline (pipeline/) and the stages (stages/) both use.

Storage (local folders and S3 behind pyarrow.fs, atomic writes), the output layout (where a phase's
parts and markers live), storage faults, a stable hash and the hash-partition shuffle helper.
Nothing here imports pipeline/ or stages/.
"""
