"""Leave-one-domain-out (LODO) folds: fit on the other data sets, evaluate on the one held apart.

Each data set of a root folder (a BEIR-layout folder: ``corpus.jsonl`` and ``qrels/``) is held
apart in turn. Everything that learns (critic layer and threshold, gate thresholds, fusion
weights, abstention thresholds) is fit on the *other* sets' fit splits only (``train`` and
``dev``, never ``test``), and the held-apart set is judged on its test split. Sets of one
domain are held apart together: CMRC 2018 and DRCD are both Chinese Wikipedia (the data README
says to treat them as one domain), so neither is fit on when the other is judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ragbrain.context import RetrievalContext

#: Splits a fold may fit on; the test split never is.
FIT_SPLITS = ("train", "dev")
TEST_SPLIT = "test"
#: Data sets that share a domain: a fold holds them apart together.
SAME_DOMAIN: dict[str, str] = {"cmrc2018_ret": "zh-wikipedia", "drcd_ret": "zh-wikipedia"}


@dataclass(frozen=True)
class Fold:
    """One held-apart data set: what is fit on, and what is judged."""

    held_out: str
    fit_on: tuple[tuple[str, str], ...]  # (data set, split) pairs
    test: tuple[str, str]

    @property
    def fit_sets(self) -> tuple[str, ...]:
        """The data sets the fold fits on, each once, in order."""
        return tuple(dict.fromkeys(name for name, _ in self.fit_on))


def domain_of(name: str, domains: Mapping[str, str] | None = None) -> str:
    """The domain a data set belongs to (its own name unless ``domains`` groups it)."""
    return (SAME_DOMAIN if domains is None else domains).get(name, name)


def data_sets(root: str | Path) -> dict[str, Path]:
    """The BEIR-layout folders directly under ``root``, by name (sorted).

    Raises:
        InvalidInputError: ``root`` is not a folder, or holds no data set.
    """
    base = Path(root).expanduser()
    if not base.is_dir():
        raise InvalidInputError(f"{base}: no such folder of data sets.")
    found = {
        p.name: p
        for p in sorted(base.iterdir())
        if p.is_dir() and (p / "corpus.jsonl").is_file() and (p / "qrels").is_dir()
    }
    if not found:
        raise InvalidInputError(
            f"{base}: no data set here (a folder with corpus.jsonl and qrels/)."
        )
    return found


def splits_of(folder: Path) -> list[str]:
    """The qrels splits a data-set folder has (``qrels/<split>.tsv``), sorted."""
    return sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))


def folds(
    sets: Mapping[str, Sequence[str]],
    *,
    only: Sequence[str] | None = None,
    domains: Mapping[str, str] | None = None,
) -> list[Fold]:
    """One fold per data set (or per name in ``only``), in name order.

    Args:
        sets: Each data set's splits (``splits_of``).
        only: Hold apart only these sets (each still fits on all the others).
        domains: Data sets sharing a domain (default ``SAME_DOMAIN``).

    Raises:
        InvalidInputError: A name in ``only`` is unknown, a held-apart set has no test split,
            or no other domain has a split to fit on.
    """
    unknown = sorted(set(only or ()) - set(sets))
    if unknown:
        raise InvalidInputError(f"Unknown data set(s) {unknown}; known: {sorted(sets)}.")
    result = []
    for name in sorted(only or sets):
        if TEST_SPLIT not in sets[name]:
            raise InvalidInputError(f"{name} has no {TEST_SPLIT} split to judge it on.")
        held = domain_of(name, domains)
        fit_on = tuple(
            (other, split)
            for other in sorted(sets)
            if domain_of(other, domains) != held
            for split in FIT_SPLITS
            if split in sets[other]
        )
        if not fit_on:
            raise InvalidInputError(
                f"Nothing to fit on when {name} is held apart: no other domain has a "
                f"{' or '.join(FIT_SPLITS)} split."
            )
        result.append(Fold(name, fit_on, (name, TEST_SPLIT)))
    return result


def root_folds(root: str | Path, only: Sequence[str] | None = None) -> list[Fold]:
    """``folds`` of every data set under ``root`` (``data_sets``)."""
    return folds({name: splits_of(path) for name, path in data_sets(root).items()}, only=only)


def check_unseen(fold: Fold, fitted_on: Sequence[tuple[str, str]]) -> None:
    """Refuse parameters fit on the held-apart domain or on any test split.

    Raises:
        InvalidInputError: ``fitted_on`` names a test split or a set of the held-apart domain.
    """
    held = domain_of(fold.held_out)
    bad = [f"{n}@{s}" for n, s in fitted_on if s == TEST_SPLIT or domain_of(n) == held]
    if bad:
        raise InvalidInputError(
            f"Parameters for {fold.held_out} were fit on {bad}: a LODO figure may only use "
            "the other domains' train/dev splits."
        )


def fold_params(
    path: str | Path, data_set: str, embedding_model: str | None = None
) -> dict[str, object]:
    """The parameters ``python -m benchmarks.lodo`` fit for the fold holding ``data_set`` apart
    (its ``folds`` entry in ``lodo.json``), checked to be unseen (``check_unseen``) and, when
    ``embedding_model`` is given, fit on stores of that model (a critic threshold is a
    threshold on that model's distances).

    Raises:
        InvalidInputError: The file is missing or not a LODO result, it has no fold for
            ``data_set``, the fold's parameters were fit on ``data_set``'s domain, or on
            stores of another embedding model.
    """
    import json

    file = Path(path).expanduser()
    try:
        payload = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{file}: not a readable LODO result ({exc}).") from exc
    all_folds = payload.get("folds") if isinstance(payload, dict) else None
    if not isinstance(all_folds, dict):
        raise InvalidInputError(f"{file}: no 'folds' (write it with `python -m benchmarks.lodo`).")
    fit_model = payload.get("embedding_model")
    if embedding_model is not None and fit_model is not None and fit_model != embedding_model:
        raise InvalidInputError(
            f"{file} was fit on {fit_model} stores, and this evaluation runs on "
            f"{embedding_model}: use the LODO result of that model (`python -m benchmarks.lodo "
            "--embedding ...`)."
        )
    params = all_folds.get(data_set)
    if not isinstance(params, dict):
        raise InvalidInputError(
            f"{file}: no fold holds {data_set!r} apart; folds: {sorted(all_folds)}."
        )
    fit_on = [(str(n), str(s)) for n, s in params.get("fit_on", [])]
    check_unseen(Fold(data_set, tuple(fit_on), (data_set, TEST_SPLIT)), fit_on)
    return params


def fold_context(
    params: Mapping[str, object], source: str, base: RetrievalContext | None = None
) -> RetrievalContext:
    """``base`` (default: the defaults) with what a fold fit (``fold_params``): the critic
    threshold of the shipped layer, the fusion's dense share and the abstention cuts it fit
    for the graph (``abstention_shipped``), each only when the fold has it.

    Raises:
        InvalidInputError: A value is out of its range or the cuts are malformed.
    """
    from dataclasses import replace

    from ragbrain.context import RetrievalContext
    from ragbrain.refusal.abstain import AbstainThresholds

    context = base or RetrievalContext()
    threshold = params.get("shipped_layer_threshold")
    if isinstance(threshold, int | float):
        context = replace(context, critic_threshold=float(threshold))
    share = params.get("dense_share")
    if isinstance(share, int | float):
        context = replace(context, dense_share=float(share))
    cuts = params.get("abstention_shipped")
    if isinstance(cuts, dict):
        context = replace(context, abstain_thresholds=AbstainThresholds.from_record(cuts, source))
    return context
