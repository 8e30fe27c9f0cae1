"""`ragbrain calibrate`: gather samples, choose the threshold, report, plot, write it to a store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError
from ragbrain.evaluation import plots
from ragbrain.evaluation.calibrate import (
    Calibration,
    labelled_samples,
    operating_point,
    pseudo_samples,
)
from ragbrain.evaluation.report import machine, write_json

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_core.embeddings import Embeddings

Reporter = Callable[[str], Callable[[int, int], None]]


@dataclass(frozen=True)
class CalibrationRun:
    """The calibration and where its results went."""

    calibration: Calibration
    report: Path
    plot: Path
    written_to: str | None

    def summary(self) -> str:
        """What a person reads after the command."""
        c = self.calibration
        lines = [
            f"gate threshold {c.threshold:.3f}: ROC AUC {c.auc:.3f}; flags 'no relevant chunk' "
            f"with precision {c.precision:.3f} and recall {c.recall:.3f} "
            f"({c.poor_searches} searches without a relevant chunk, {c.good_searches} with one; "
            f"{c.source})",
            f"wrote {self.report} and {self.plot}",
        ]
        if self.written_to:
            lines.append(f"the retriever over {self.written_to} now uses this threshold")
        return "\n".join(lines)


def run_calibration(
    data: Path | None,
    split: str,
    store_path: Path | None,
    embeddings: Embeddings,
    *,
    samples: int,
    out: Path,
    reporter: Reporter,
    write: bool = True,
) -> CalibrationRun:
    """Calibrate from labelled ``data`` (its cached corpus store) or self-supervised from a store.

    With ``data``, the threshold is written into ``store_path`` only when one is given; without
    ``data``, ``store_path`` (None: the default store) supplies the samples and receives it.

    Raises:
        DataSetError, StoreNotFoundError, InvalidInputError: bad data, no store, one class only.
    """
    from ragbrain.embeddings import model_name_of
    from ragbrain.evaluation.beir import corpus_store, load_split
    from ragbrain.store import Store

    if samples < 10:
        raise InvalidInputError(f"--samples must be at least 10, got {samples}.")
    model = model_name_of(embeddings)
    target: Store | None = None
    if data is not None:
        labelled = load_split(data, split)
        source = f"{labelled.name}/{split}, {model}, labelled, {samples} queries"
        corpus = corpus_store(labelled, embeddings, progress=reporter("embedding corpus"))
        distances, no_relevant = labelled_samples(labelled, corpus, limit=samples)
        name = f"calibrate-{labelled.name}-{split}"
        if store_path is not None:
            target = Store.open(store_path, embeddings)
    else:
        target = Store.open(store_path, embeddings)
        source = f"self-supervised from {target.location}, {model}, {samples} chunks"
        distances, no_relevant = pseudo_samples(target, samples)
        name = "calibrate-store"
    calibration = operating_point(distances, no_relevant, source)
    report, plot = out / f"{name}.json", out / f"{name}.png"
    write_json(
        report,
        {
            **calibration.as_dict(),
            "model": model,
            "distances": {
                "no_relevant": [d for d, y in zip(distances, no_relevant, strict=True) if y],
                "relevant": [d for d, y in zip(distances, no_relevant, strict=True) if not y],
            },
            "machine": machine(),
        },
    )
    plots.plot_distances(
        [d for d, y in zip(distances, no_relevant, strict=True) if not y],
        [d for d, y in zip(distances, no_relevant, strict=True) if y],
        calibration.threshold,
        f"Gate calibration: {source}",
        plot,
    )
    written = None
    if write and target is not None:
        target.set_gate_threshold(calibration.threshold, source)
        written = target.location
    return CalibrationRun(calibration, report, plot, written)
