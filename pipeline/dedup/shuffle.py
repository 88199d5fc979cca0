"""The dedup steps' shuffles (core.shuffle) by document number: by part, or by a value."""

from __future__ import annotations

from core.shuffle import group_apply
from pipeline.dedup.context import ROW_BITS


def by_part(ds, column: str, partitions: int, fn, **fn_kwargs):
    """Group rows by the part of the document in ``column``: a group reads each part file once."""
    return group_apply(ds, partitions, fn, fn_kwargs, column=column, shift=ROW_BITS)


def by_value(ds, column: str, partitions: int, fn, **fn_kwargs):
    """Group rows by the value of ``column``: a group holds every row with its value."""
    return group_apply(ds, partitions, fn, fn_kwargs, column=column)
