"""The gate threshold shipped for a model: calibrated on labelled data, written into its profile.

``ragbrain calibrate --data ...`` chooses a threshold from labelled folders (pooled); this runs
the same calibration for an embedding model and, with ``--ship``, writes the threshold, its ROC
AUC, the data and the command into the model's profile (``src/ragbrain/models/profiles/``),
where ``ragbrain.gates`` reads it for stores that were never calibrated.

    python -m benchmarks.gate --data ../shared/data/scifact --data ../shared/data/nfcorpus@dev \
        --samples 1000 [--embedding e5-small] [--ship]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from benchmarks.common import RESULTS, say


def main() -> None:
    """Calibrate the gate for one model on labelled data; ``--ship`` writes its profile."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, action="append", required=True, help="DIR or DIR@SPLIT; repeat."
    )
    parser.add_argument("--split", default="train", help="Split of a --data without @SPLIT.")
    parser.add_argument("--samples", type=int, default=1000, help="Queries per folder.")
    parser.add_argument("--embedding", default=None, help="Model choice [default model].")
    parser.add_argument("--ship", action="store_true", help="Write the model's profile.")
    args = parser.parse_args()

    from ragbrain.evaluation.calibrate_run import run_calibration
    from ragbrain.models.embeddings import default_embeddings, embeddings_for, model_name_of
    from ragbrain.models.profiles import ShippedGate, profile, write_profile

    embeddings = embeddings_for(args.embedding) if args.embedding else default_embeddings()
    model = model_name_of(embeddings)

    def progress(stage: str) -> Callable[[int, int], None]:
        say(stage)
        return lambda done, total: None

    run = run_calibration(
        args.data,
        args.split,
        None,
        embeddings,
        samples=args.samples,
        out=RESULTS / "eval" / ("gate" if args.embedding is None else f"gate-{args.embedding}"),
        reporter=progress,
        write=False,
    )
    print(run.summary())
    if not args.ship:
        return
    found = profile(model)
    if found is None:
        sys.exit(f"{model} has no profile: add src/ragbrain/models/profiles/<model>.json first.")
    names = run.calibration.source.split(",")[0]
    gate = ShippedGate(
        threshold=round(run.calibration.threshold, 3),
        auc=round(run.calibration.auc, 3),
        data=f"{names}, up to {args.samples} queries each, pooled",
        command="python -m benchmarks.gate " + shlex.join(sys.argv[1:]),
    )
    say(f"wrote {write_profile(replace(found, gate=gate))}")


if __name__ == "__main__":
    main()
