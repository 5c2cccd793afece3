"""Model provenance recorded into results names models relative to the checkout."""

from __future__ import annotations

from latentchess.provenance import REPO_ROOT, note_model, recording_models


def test_models_inside_the_checkout_are_recorded_relative_to_it() -> None:
    inside = {"model": str(REPO_ROOT / "src/latentchess/weights/sparse-64"), "precision": "fp32"}
    outside = {"model": "/elsewhere/model", "model_sha256": "abc", "precision": "int8"}
    with recording_models() as models:
        note_model(inside)
        note_model(inside)  # each model once
        note_model(outside)
    assert models == [
        {"model": "src/latentchess/weights/sparse-64", "precision": "fp32"},
        {"model": "/elsewhere/model", "model_sha256": "abc", "precision": "int8"},
    ]
    note_model(inside)  # outside every block: recorded nowhere, no error
    assert len(models) == 2
