"""`ragbrain calibrate`: gather samples, choose the threshold, report, plot, write it to a store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    data: Sequence[Path],
    split: str,
    store_path: Path | None,
    embeddings: Embeddings | None,
    *,
    samples: int,
    out: Path,
    reporter: Reporter,
    write: bool = True,
) -> CalibrationRun:
    """Calibrate from labelled ``data`` (their cached corpus stores) or from a store's own chunks.

    Args:
        data: Labelled BEIR-layout folders (``DIR`` or ``DIR@SPLIT``); the samples of all of
            them are pooled into one threshold. Empty: self-supervised from ``store_path``.
        split: The split of each folder that does not name one.
        store_path: With ``data``, the store that receives the threshold (None: none does);
            without, the store (None: the default one) that supplies the samples and receives it.
        embeddings: The model to calibrate for; None: the store's own model (the default
            model for labelled ``data`` without a store). A model other
            than the store's is refused by ``Store.open``.
        samples: Queries per folder (labelled) or chunks (self-supervised).

    Raises:
        DataSetError, StoreNotFoundError, InvalidInputError: bad data, no store, one class only.
    """
    from ragbrain.evaluation.beir import corpus_store, load_split, split_spec
    from ragbrain.models.embeddings import default_embeddings
    from ragbrain.settings import resolve_model
    from ragbrain.store import Store

    if samples < 10:
        raise InvalidInputError(f"--samples must be at least 10, got {samples}.")
    target: Store | None = None
    if store_path is not None or not data:
        target = Store.open(store_path, embeddings)  # None: the store's own model
        embeddings = target.embeddings
    elif embeddings is None:
        embeddings = default_embeddings()
    model = resolve_model(embeddings).name
    distances: list[float] = []
    no_relevant: list[bool] = []
    if data:
        names = []
        for given in data:
            labelled = load_split(*split_spec(given, split))
            corpus = corpus_store(
                labelled, embeddings, progress=reporter(f"embedding {labelled.name} corpus")
            )
            more_distances, more_flags = labelled_samples(labelled, corpus, limit=samples)
            distances += more_distances
            no_relevant += more_flags
            names.append(f"{labelled.name}-{labelled.split}")
        source = f"{' + '.join(names)}, {model}, labelled, up to {samples} queries each"
        name = "calibrate-" + "+".join(names)
    else:
        assert target is not None
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
