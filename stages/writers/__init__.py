"""Training-shard writers: MosaicML MDS, WebDataset and Megatron IndexedDataset (stages.writers.formats
lists them), and sinks that publish each closed shard file (a local folder, or any storage root,
s3:// included).

A writer encodes Arrow tables of samples into shard files in a local staging
folder and hands every closed file to its sink; the index is written last, so
a reader never sees an index that names a shard not yet published.
"""

from stages.writers.common import ShardFile
from stages.writers.config import ShardsConfig
from stages.writers.formats import FORMATS, TokenInfo, enabled_formats
from stages.writers.group import GroupResult, write_group
from stages.writers.mds import MDSConfig, MDSWriter, mds_columns, merge_mds_indexes
from stages.writers.sink import LocalSink, Sink, StorageSink
from stages.writers.webdataset import WebDatasetConfig, WebDatasetWriter, merge_wds_indexes

__all__ = [
    "FORMATS",
    "TokenInfo",
    "enabled_formats",
    "LocalSink",
    "MDSConfig",
    "MDSWriter",
    "ShardFile",
    "ShardsConfig",
    "Sink",
    "StorageSink",
    "WebDatasetConfig",
    "WebDatasetWriter",
    "GroupResult",
    "write_group",
    "mds_columns",
    "merge_mds_indexes",
    "merge_wds_indexes",
]
