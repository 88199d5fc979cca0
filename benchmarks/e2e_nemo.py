"""NeMo Curator 1.4's closest CPU pipeline on benchmarks/e2e.py's WARCs (run in NeMo Curator's own venv).

    .venv-nemo/bin/python benchmarks/e2e_nemo.py SPEC.json     # BENCH_RESULT=out.json, BENCH_CPU=n

benchmarks/e2e.py starts this (``--systems nemo``, ``--nemo-python``) and measures it from outside
(wall, CPU and PSS of the whole process tree).  Stages, all of NeMo Curator's own, on an embedded
Ray with one CPU (``ray.init(num_cpus=1)`` before its executor, whose own ``ray.init`` then joins it):

- ``FilePartitioningStage`` (one WARC per task) -> ``DocumentIterateExtractStage`` with its
  ``CommonCrawlWarcIterator`` (warcio; every response record) and ``CommonCrawlHTMLExtractor``
  (charset decoding, pycld2 language detection, then its default jusText extractor with the stop
  list of the detected language; a page in a language without a stop list yields nothing);
- its English heuristic filter set, exactly the ``ScoreFilter`` stages of its packaged
  ``config/text/heuristic_filter_english_pipeline.yaml`` (28 filters, in that order);
- ``JsonlWriter`` of what is kept.

Not run: its exact and fuzzy deduplication (``ExactDeduplicationWorkflow``, ``FuzzyDeduplicationWorkflow``):
in 1.4 both are cuDF stages that ask Ray for a GPU (``Resources(gpus=1.0)``); this machine has none.

Which filter removed a document is recorded by each ScoreFilter itself (a subclass that writes the
ids it removes to a file; no extra stages), as benchmarks/e2e.py
records DataTrove's drops.  Nothing is downloaded: the WARCs
are local files, pycld2 and the stop lists ship in its packages.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import child_report, child_setup  # noqa: E402

FILTERS_YAML = "config/text/heuristic_filter_english_pipeline.yaml"


def heuristic_filters() -> list:
    """NeMo Curator's English heuristic ScoreFilter stages, from the YAML it ships (reader and writer left out)."""
    import nemo_curator
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(Path(nemo_curator.__file__).parent / FILTERS_YAML)
    cfg.input_path, cfg.output_path = "unused", "unused"
    stages = OmegaConf.to_container(cfg, resolve=True)["stages"]
    return [instantiate(s) for s in stages if s["_target_"].endswith("ScoreFilter")]


def traced(score_filter, step: str, folder: str):
    """The same ScoreFilter, recording the ids it removes (and,
    for the first, the ids reaching it) in folder/step-*.txt.

    One stage per filter as in NeMo Curator's own pipeline: no extra stages, whose actors would add to its time.
    Defined here, so Ray ships the class by value to its workers.
    """
    from nemo_curator.stages.text.filters.score_filter import ScoreFilter

    @dataclass
    class TracedScoreFilter(ScoreFilter):
        step: str = ""
        where: str = ""
        record_input: bool = False

        def process(self, batch):
            before = batch.to_pandas()["warc_id"].tolist()
            out = super().process(batch)
            after = set(out.to_pandas()["warc_id"]) if out is not None else set()
            self._write("removed", [i for i in before if i not in after])
            if self.record_input:
                self._write("input", before)
            return out

        def _write(self, what: str, ids: list[str]) -> None:
            name = f"{self.step}.{what}-{os.getpid()}-{uuid.uuid4().hex}.txt"
            Path(self.where, name).write_text("".join(f"{i}\n" for i in ids))

    (one,), (field,) = score_filter.filter_obj, score_filter.text_field  # the packaged set: one filter per stage
    return TracedScoreFilter(filter_obj=one, text_field=field, step=step, where=folder,
                             record_input=step.startswith("00_"))  # fmt: skip


def filter_name(stage) -> str:
    return type(stage.filter_obj[0]).__name__


def build_stages(files: list[str], taps: str, out: str) -> list:
    from nemo_curator.stages.file_partitioning import FilePartitioningStage
    from nemo_curator.stages.text.download.base.iterator import DocumentIterateExtractStage
    from nemo_curator.stages.text.download.common_crawl.extract import CommonCrawlHTMLExtractor
    from nemo_curator.stages.text.download.common_crawl.warc_iterator import CommonCrawlWarcIterator
    from nemo_curator.stages.text.io.writer import JsonlWriter

    # FilePartitioningStage matches the last suffix only
    stages = [
        FilePartitioningStage(file_paths=files, files_per_partition=1, file_extensions=[".gz", ".warc"]),
        DocumentIterateExtractStage(iterator=CommonCrawlWarcIterator(), extractor=CommonCrawlHTMLExtractor()),
    ]
    stages += [traced(f, f"{i:02d}_{filter_name(f)}", taps) for i, f in enumerate(heuristic_filters())]
    return [*stages, JsonlWriter(path=out)]


def read_traces(folder: Path) -> tuple[set[str], dict[str, set[str]]]:
    """(ids that reached the first filter, {filter step: ids it removed})."""
    reached, removed = set(), {}
    for f in sorted(folder.glob("*.txt")):
        step, what = f.name.rsplit("-", 2)[0].rsplit(".", 1)
        ids = {f"urn:uuid:{i}" for i in f.read_text().split()}
        if what == "input":
            reached |= ids
        else:
            removed.setdefault(step, set()).update(ids)
    return reached, removed


def fate(responses: list[str], reached: set[str], removed: dict[str, set[str]]) -> dict[str, str]:
    """Every response record -> the step that removed it, or 'kept'."""
    by_doc = {i: step.split("_", 1)[1] for step, ids in removed.items() for i in ids}
    out = {}
    for doc_id in responses:
        if doc_id not in reached:
            out[doc_id] = "extract: no text (undecodable, no stop list for its language, or jusText kept nothing)"
        else:
            out[doc_id] = f"heuristic: {by_doc[doc_id]}" if doc_id in by_doc else "kept"
    return out


def response_ids(files: list[str]) -> list[str]:
    from warcio.archiveiterator import ArchiveIterator

    ids = []
    for path in files:
        with open(path, "rb") as f:
            ids += [
                r.rec_headers.get_header("WARC-Record-ID").strip("<>")
                for r in ArchiveIterator(f)
                if r.rec_type == "response"
            ]
    return ids


def run(spec: dict, tmp: Path) -> dict:
    import ray
    from nemo_curator.backends.ray_data import RayDataExecutor
    from nemo_curator.backends.xenna import XennaExecutor
    from nemo_curator.pipeline import Pipeline

    taps, out = tmp / "taps", tmp / "kept"
    taps.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    ray.init(
        num_cpus=1, log_to_driver=False
    )  # with the dashboard: Xenna's monitor lists actors through Ray's state API
    os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address  # that API must find this cluster, not another's
    t_ray = time.perf_counter() - t0
    stages = build_stages(spec["files"], str(taps), str(out))
    # Xenna's default streaming mode wants a CPU per stage at once (~60 here) and gives the pipeline 95% of the
    # cluster's CPUs (0 of 1, rounded down): on one CPU it runs only in batch mode, stage after stage, with all of it.
    xenna = {"execution_mode": "batch", "cpu_allocation_percentage": 1.0}
    executor = XennaExecutor(config=xenna) if spec.get("executor", "xenna") == "xenna" else RayDataExecutor()
    t1 = time.perf_counter()
    Pipeline(name="nemo_e2e", stages=stages).run(executor)
    t_pipeline = time.perf_counter() - t1
    reached, removed = read_traces(taps)
    doc_fate = fate(response_ids(spec["files"]), reached, removed)
    return {
        "fate": doc_fate,
        "kept": sum(f == "kept" for f in doc_fate.values()),
        "filters": [filter_name(s) for s in stages if hasattr(s, "filter_obj")],
        "executor": type(executor).__name__,
        "seconds": {"ray.init": t_ray, "pipeline": t_pipeline},
    }


def main(argv: list[str]) -> int:
    child_setup()
    spec_path = Path(argv[0])
    child_report(run(json.loads(spec_path.read_text()), spec_path.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
