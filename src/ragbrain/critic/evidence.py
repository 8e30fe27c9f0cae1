"""EvidenceCritic: the critic of English stores, a logistic layer over evidence that holds on
notes it never saw, with no encoder of its own.

Measured leave-one-domain-out on the English sets (``docs/decisions/english-critic.md``),
the cross-encoder's logit ranks a store's candidates at or below chance where it never saw
the domain, and adding it to the columns below moves the ROC AUC within noise. What
carries the signal is the embedding's cosine over the whole chunk (the distance the store
already computed), how much of the question's rare words a chunk holds, and whether the
dense and the lexical evidence agree on a chunk's place in the list. Those seven columns:

- ``distance`` and ``distance_gap``: the chunk's cosine distance, and how much further it is
  than the list's nearest;
- ``support`` and ``support_gap``: the share of the question's IDF mass the chunk holds
  (``LexicalIndex.query_weights``: a word the notes never use counts as the rarest), and how
  far it falls short of the list's best;
- ``distance_rank``, ``support_rank`` and ``rank``: its place in the list by each evidence
  and in the retriever's order (``log1p``; 0 is the first).

It runs on numpy alone (no torch, no tokenizer model): a cold CLI query on an English store
loads no deep-learning framework. The layer and its threshold ship in ``evidence.json``,
fit by ``python -m benchmarks.lodo.evidence --ship``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.errors import CriticLoadError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ragbrain.lexical.index import LexicalIndex
    from ragbrain.refusal.abstain import AbstainThresholds
    from ragbrain.store import Store
    from ragbrain.store.lexical import LexicalSearcher

#: The layer's input columns (its ``inputs``), in the order ``evidence_columns`` returns them.
COLUMNS = (
    "distance",
    "distance_gap",
    "support",
    "support_gap",
    "distance_rank",
    "support_rank",
    "rank",
)
LAYER_FILE = "evidence.json"


def default_evidence_path() -> Path:
    """Where the package keeps the shipped evidence layer."""
    return Path(__file__).parent / LAYER_FILE


def supports(
    index: LexicalIndex,
    query: str,
    passages: Sequence[str],
    ids: Sequence[str] | None = None,
) -> list[float]:
    """Each passage's share of the question's rarity-weighted terms
    (``LexicalIndex.query_weights``), in [0, 1]; all 0.0 for a question without terms.
    With the passages' ``ids``, an indexed chunk's terms are the index's (tokenized when it
    was indexed, from the same text) rather than its text tokenized again."""
    weights, mass = index.query_weights(query)
    if mass <= 0:
        return [0.0] * len(passages)
    out = []
    for i, passage in enumerate(passages):
        known = ids is not None and index.position(ids[i]) is not None
        held = index.terms_of(ids[i]) if known and ids else index.text_terms(passage)
        out.append(min(sum(w for t, w in weights.items() if t in held) / mass, 1.0))
    return out


def evidence_columns(
    distances: Sequence[float], support: Sequence[float]
) -> npt.NDArray[np.float64]:
    """The ``COLUMNS`` of one query's candidates, in the retriever's order (best first).

    Returns:
        Shape (n, len(COLUMNS)).
    """
    import numpy as np

    d = np.asarray(distances, dtype=np.float64)
    s = np.asarray(support, dtype=np.float64)
    if len(d) == 0:
        return np.zeros((0, len(COLUMNS)))
    by_distance = np.argsort(np.argsort(d, kind="stable"), kind="stable")
    by_support = np.argsort(np.argsort(-s, kind="stable"), kind="stable")
    columns = [
        d,
        d - d.min(),
        s,
        s.max() - s,
        np.log1p(by_distance),
        np.log1p(by_support),
        np.log1p(np.arange(len(d))),
    ]
    return np.stack(columns, axis=1)


def probabilities(x: npt.NDArray[np.float64], layer: dict[str, Any]) -> list[float]:
    """The layer's relevance probabilities of rows ``x`` (standardized, then logistic)."""
    import numpy as np

    z = (x - np.asarray(layer["mean"])) / np.asarray(layer["scale"])
    logits = z @ np.asarray(layer["weights"]) + float(layer["bias"])
    with np.errstate(over="ignore"):
        probs = 1.0 / (1.0 + np.exp(-logits))
    return [p if math.isfinite(p) else math.nan for p in probs.tolist()]


def read_layer(path: Path) -> dict[str, Any]:
    """Read and check an evidence layer file: a logistic layer over ``COLUMNS`` (its
    ``inputs``), its ``threshold``, the ``embedding_model`` it learned and, optionally, the
    strict level's ``abstain`` cuts (checked as a critic folder's are).

    Raises:
        CriticLoadError: The file is missing, not JSON, or not such a layer.
    """
    from ragbrain.critic.folder import check_abstain, check_combiner, check_threshold

    try:
        layer = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CriticLoadError(f"{path}: missing.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CriticLoadError(f"{path}: not a readable JSON file ({exc}).") from exc
    if not isinstance(layer, dict):
        raise CriticLoadError(f"{path}: must hold a JSON object.")
    check_combiner(path, layer, (COLUMNS,))
    check_threshold(path, layer.get("threshold"))
    if not isinstance(layer.get("embedding_model"), str):
        raise CriticLoadError(f"{path}: 'embedding_model' must name the model it learned.")
    if "abstain" in layer:
        check_abstain(path, layer["abstain"], "'abstain'")
    return layer


def distance_scale(own: str, model: str | None) -> float:
    """What a cosine distance of ``model``'s is multiplied by to read as one of ``own``'s: the
    ratio of the two models' gate thresholds (``ragbrain.models.profiles``: both calibrated
    on the same SciFact and NFCorpus queries; all-MiniLM-L6-v2 over multilingual-e5-small,
    0.455 / 0.129 = 3.53: e5-small's distances are compressed); 1.0 for the same model or
    one without a profile (docs/decisions/e5-notes-script-critic.md)."""
    from ragbrain.models.profiles import profile

    theirs = profile(model) if model is not None and model != own else None
    mine = profile(own)
    if theirs is None or mine is None or theirs.gate.threshold <= 0:
        return 1.0
    return round(mine.gate.threshold / theirs.gate.threshold, 2)


class EvidenceCritic:
    """Judges a store's candidates by their distance, their share of the question's rare
    words and the agreement of the two (``COLUMNS``), with a logistic layer and its cut.

    It reads the store's lexical index for the words' rarity: bind it to a store with
    ``for_store`` (``build_graph`` does), or pass ``lexical``. The distances must be of the
    embedding model the layer learned (``embedding_model``); ``ragbrain.critic.choice``
    uses this critic only on stores of that model.
    """

    uses_distance = True
    #: How the trace names it (``critic: 'on (evidence, threshold 0.157)'``).
    kind = "evidence"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        lexical: LexicalSearcher | LexicalIndex | None = None,
    ) -> None:
        """Load the layer at ``path`` (default: the shipped one).

        Raises:
            CriticLoadError: The layer file is missing or malformed.
        """
        self.path = Path(path) if path is not None else default_evidence_path()
        self.layer = read_layer(self.path)
        self.threshold = float(self.layer["threshold"])
        self.embedding_model = str(self.layer["embedding_model"])
        self.lexical = lexical
        #: Each distance is multiplied by this before the layer reads it (``for_model``).
        self.distance_scale = 1.0
        self.abstain_thresholds: AbstainThresholds | None = None
        record = self.layer.get("abstain")
        if record is not None:  # checked by read_layer
            from ragbrain.refusal.abstain import AbstainThresholds

            self.abstain_thresholds = AbstainThresholds.from_record(
                record, f"fit on the English sets' train/dev for {self.embedding_model}"
            )

    @property
    def fingerprint(self) -> str:
        """A short hash of the layer's numbers: cuts fit on its scores name it."""
        import hashlib

        numbers = {k: self.layer[k] for k in ("mean", "scale", "weights", "bias")}
        return hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()[:12]

    def for_model(self, model: str | None) -> EvidenceCritic:
        """This critic judging a store of ``model``'s distances: scaled onto the layer's own
        model's (``distance_scale``); itself on a store of that model or an unknown one."""
        import copy

        scale = distance_scale(self.embedding_model, model)
        if scale == 1.0:
            return self
        scaled = copy.copy(self)
        scaled.distance_scale = scale
        return scaled

    def for_notes(self, per_source: float | None, model: str | None = None) -> EvidenceCritic:
        """This critic with the strict level's cuts fit on notes folders when the store's
        notes span enough chunks a note (``ragbrain.refusal.abstain.notes_cuts``; None: not
        measured), those fit for ``model``'s stores when it is not the layer's and the file has
        them; itself otherwise."""
        import copy

        from ragbrain.refusal.abstain import notes_cuts

        key = "" if model is None or model == self.embedding_model else f"{self.kind}@{model}"
        cuts = notes_cuts(self.kind, self.fingerprint, per_source, key=key)
        if cuts is None:
            return self
        chosen = copy.copy(self)
        chosen.abstain_thresholds = cuts
        return chosen

    def for_store(self, store: Store, lexical: LexicalSearcher | None = None) -> EvidenceCritic:
        """This layer reading ``store``'s lexical index (``lexical`` when the graph has one,
        else one opened here, which follows the store's changes as the graph's would)."""
        import copy

        if lexical is None:
            from ragbrain.store.lexical import LexicalSearcher

            lexical = LexicalSearcher(store)
        bound = copy.copy(self)
        bound.lexical = lexical
        return bound

    def _index(self) -> LexicalIndex:
        from ragbrain.lexical.index import LexicalIndex

        if self.lexical is None:
            raise ValueError(
                "EvidenceCritic needs the store's lexical index: bind it with "
                "for_store(store) or pass lexical=."
            )
        if isinstance(self.lexical, LexicalIndex):
            return self.lexical
        return self.lexical.index

    def score(
        self,
        query: str,
        passages: Sequence[str],
        distances: Sequence[float] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[float]:
        """Relevance probabilities in [0, 1] of one query's candidates, in the retriever's
        order (best first); a non-finite value becomes NaN (never relevant). ``ids``, the
        candidates' chunk ids, spare tokenizing the indexed ones again (``supports``).

        Raises:
            ValueError: No distance per passage, or no lexical index bound.
        """
        if not passages:
            return []
        if distances is None or len(distances) != len(passages):
            raise ValueError(
                f"EvidenceCritic judges with {self.embedding_model} distances; pass one "
                "distance per passage."
            )
        if ids is not None and len(ids) != len(passages):
            raise ValueError("Pass one id per passage.")
        support = supports(self._index(), query, passages, ids)
        if self.distance_scale != 1.0:
            distances = [d * self.distance_scale for d in distances]
        return probabilities(evidence_columns(distances, support), self.layer)
