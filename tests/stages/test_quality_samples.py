"""The committed demonstration model: what samples/quality/make_model.py makes, and it scores the samples sensibly."""

from __future__ import annotations

import hashlib
import importlib.util
import json

import numpy as np
import pyarrow as pa
import pytest

from stages.classify import ClassifierConfig, ClassifyStage
from tests.conftest import REPO

MODEL = REPO / "samples" / "quality" / "model.ftz"
METRICS = REPO / "samples" / "quality" / "model.metrics.json"


def make_model():
    spec = importlib.util.spec_from_file_location("make_model", REPO / "samples" / "quality" / "make_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sample_sets():
    mm = make_model()
    samples = REPO / "samples"
    return mm.labeled_sets(mm.extract_texts(mm.sample_files(samples)), samples)


def test_committed_model_is_small_and_described():
    record = json.loads(METRICS.read_text())
    assert MODEL.stat().st_size < 1_500_000
    assert record["sha256"] == hashlib.sha256(MODEL.read_bytes()).hexdigest()
    assert record["made_by"]["command"] == "python samples/quality/make_model.py"
    assert record["deterministic"] and record["labels"] == ["hq", "cc"] and record["positive_label"] == "hq"
    assert record["valid_metrics"]["per_label"]["hq"]["support"] > 50


def test_committed_model_separates_the_samples(sample_sets):
    pos, neg = sample_sets
    stage = ClassifyStage([ClassifierConfig(name="quality", model=str(MODEL), label="hq")])
    scores = {}
    for name, table in (("pos", pos), ("neg", neg)):
        out = stage(pa.table({"id": table.column("id"), "text": table.column("text")}))
        scores[name] = out.column("quality_score").to_numpy()
    assert (scores["pos"] >= 0.5).mean() >= 0.95 and (scores["neg"] < 0.5).mean() >= 0.95
    assert np.median(scores["pos"]) > 0.9 > 0.1 > np.median(scores["neg"])


def test_make_model_rebuilds_the_committed_model(sample_sets, tmp_path):
    """Same labeled texts -> the same bytes (training is seeded, one thread, allocations zeroed)."""
    mm = make_model()
    record = json.loads(METRICS.read_text())
    if mm.training_data_sha256(*sample_sets) != record["made_by"]["training_data_sha256"]:
        pytest.skip(
            "the samples or the extractor changed since the model was made: run python samples/quality/make_model.py"
        )
    assert mm.build(REPO / "samples", tmp_path / "model.ftz", data=sample_sets) == 0
    assert (tmp_path / "model.ftz").read_bytes() == MODEL.read_bytes()
