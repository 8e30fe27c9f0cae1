"""Refit the shipped critic's logistic layers on its dev queries, as the retriever lists them now.

The shipped critic's layers and thresholds were fit on the retriever's hybrid top 10 of its
dev queries (`critic train`: the 30% of sampled SciFact train and NFCorpus dev queries its
encoder never trained on). When the retriever changes how it builds those lists (the score
fusion), the layers see other lists than they were fit on. This refits them, with the same
rule and the same queries, on the lists the retriever makes today; the encoder, its features
and the other models' layers stay as they are. Nothing here reads a test split.

    python -m benchmarks.refit_shipped_layers --data ../shared/data/scifact \
        --data ../shared/data/nfcorpus@dev --out /tmp/critic-refit [--install]

``--install`` copies the new ``calibration.json`` into the shipped critic folder (the rest of
``--out`` is a byte copy of it).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from ragbrain.critic.folder import WITH_DISTANCE, default_critic_path, read_calibration
from ragbrain.critic.training.recalibrate import recalibrate
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.save import write_calibration
from ragbrain.critic.training.sources import retrieved_lists
from ragbrain.models.embeddings import default_embeddings, model_name_of


def main() -> None:
    """Refit, write to ``--out``, print the dev figures recorded at training (on the lists of
    then) and those of the refit layers (on today's lists)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--install", action="store_true")
    args = parser.parse_args()

    shipped = default_critic_path()
    before = json.loads((shipped / "calibration.json").read_text())
    recipe = Recipe(**before["recipe"])
    embeddings = default_embeddings()
    lists, sources = retrieved_lists(args.data, embeddings, recipe, dev_only=True)
    after = recalibrate(
        shipped,
        lists,
        args.out,
        recipe,
        sources={"by": "python -m benchmarks.refit_shipped_layers", **sources},
        embedding_model=model_name_of(embeddings),
    )
    for name, old, new in (
        ("plain", before, after),
        ("with distance", before[WITH_DISTANCE], after[WITH_DISTANCE]),
    ):
        print(f"{name}: threshold {old['threshold']:.4f} (recorded) -> {new['threshold']:.4f}")
        for dataset, figures in new["dev"].items():
            was = old["dev"].get(dataset, {})
            print(
                f"  {dataset}: kept {was.get('relevant_kept', float('nan')):.3f} -> "
                f"{figures['relevant_kept']:.3f}, dropped "
                f"{was.get('irrelevant_dropped', float('nan')):.3f} -> "
                f"{figures['irrelevant_dropped']:.3f}, AUC {figures['auc']:.3f}"
            )
    if args.install:
        after["recalibrated"]["from"] = "the shipped critic (src/ragbrain/critic/default)"
        staged = args.out / "calibration.json"
        write_calibration(args.out, after)
        read_calibration(args.out)  # checked before it is in place
        shutil.copyfile(staged, shipped / ".calibration.json.new")
        (shipped / ".calibration.json.new").replace(shipped / "calibration.json")
        print(f"installed into {shipped}")


if __name__ == "__main__":
    main()
