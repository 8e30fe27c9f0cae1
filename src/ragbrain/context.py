"""Per-run knobs of the retrieval graph: one frozen dataclass, each field described for Studio."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ragbrain.errors import InvalidInputError
from ragbrain.hybrid import DENSE_SHARE
from ragbrain.models.profiles import default_profile
from ragbrain.query.inputs import AbstainLevel, check_abstain, check_k
from ragbrain.refusal.abstain import AbstainThresholds

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

ENGLISH_MARKERS: tuple[str, ...] = (
    "and",
    "both",
    "between",
    "compare",
    "compared",
    "comparing",
    "comparison",
    "difference",
    "differences",
    "differ",
    "versus",
    "vs",
    "last time",
    "previously",
    "pros and cons",
)
# A bare "と" is left out on purpose: it is also the particle in こと, ところ and と思う,
# so it would mark most Japanese sentences as compound.
JAPANESE_MARKERS: tuple[str, ...] = (
    "比較",
    "比べ",
    "違い",
    "差分",
    "前回",
    "および",
    "並びに",
    "それぞれ",
    "両方",
    "とどちら",
    "と違",
)
THAI_MARKERS: tuple[str, ...] = (
    "เปรียบเทียบ",
    "ความแตกต่าง",
    "แตกต่าง",
    "ต่างกัน",
    "และ",
    "ครั้งก่อน",
    "ครั้งที่แล้ว",
    "เทียบกับ",
)
# Simplified and traditional forms. 和 / 与 ("A and B") also sit inside words (和平, 共和国,
# 参与), where they widen the depth needlessly: a deeper search costs time, never a result.
CHINESE_MARKERS: tuple[str, ...] = (
    "比较",
    "區別",
    "区别",
    "对比",
    "對比",
    "不同",
    "差异",
    "差異",
    "上次",
    "还是",
    "還是",
    "优缺点",
    "優缺點",
    "和",
    "与",
    "與",
)
DEFAULT_MARKERS: tuple[str, ...] = (
    ENGLISH_MARKERS + JAPANESE_MARKERS + THAI_MARKERS + CHINESE_MARKERS
)

DEFAULT_GATE_THRESHOLD = 0.55
#: The default model's profile, whose shipped gate the knob's description names.
_DEFAULT = default_profile()

SearchMode = Literal["dense", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "hybrid")


@dataclass(frozen=True)
class RetrievalContext:
    """Knobs for one retrieval run; LangGraph Studio shows each field with its description."""

    gate_threshold: float | None = field(
        default=None,
        metadata={
            "description": "CRAG gate: the search is 'poor' when its best cosine distance exceeds "
            "this (0 = identical, 2 = opposite). None: the threshold `ragbrain calibrate` wrote "
            "into the store, else the one shipped for its embedding model "
            f"({_DEFAULT.name}: {_DEFAULT.gate.threshold}), else 0.55."
        },
    )
    depth_tiers: tuple[int, int, int] = field(
        default=(5, 7, 10),
        metadata={"description": "Chunks fetched for a simple, a medium and a complex query."},
    )
    tier_scores: tuple[int, int] = field(
        default=(1, 3),
        metadata={
            "description": "Complexity scores at which the medium and the complex tier start."
        },
    )
    length_thresholds: tuple[int, ...] = field(
        default=(30, 60),
        metadata={
            "description": "Each length (in characters, not words) the query exceeds adds 1 to "
            "its complexity."
        },
    )
    markers: tuple[str, ...] = field(
        default=DEFAULT_MARKERS,
        metadata={
            "description": "Words of compound or comparative questions (English, Japanese, "
            "Thai); each one present adds 1 to the complexity."
        },
    )
    critic_threshold: float | None = field(
        default=None,
        metadata={
            "description": "Chunks the critic scores below this are dropped; None uses the "
            "critic's own calibrated threshold."
        },
    )
    k: int | None = field(
        default=None,
        metadata={"description": "Fixed number of chunks; None lets the query choose (adaptive)."},
    )
    judged: int = field(
        default=10,
        metadata={
            "description": "Candidates searched and judged by the critic (at least the depth). "
            "With the critic on, every candidate it keeps is handed over, so its evidence may "
            "raise the depth up to this; with it off, the first 'depth' are. Ignored when k "
            "is set."
        },
    )

    search_mode: SearchMode = field(
        default="hybrid",
        metadata={
            "description": "'hybrid' fuses BM25 and vector hits by score, BM25 weighed by "
            "how much of the query it matches; 'dense' is vector search only. Either way, a "
            "'poor' verdict adds a lexical rescue to the fallback. Needs the store's lexical "
            "index (a graph without one is dense)."
        },
    )

    split_compound: bool = field(
        default=True,
        metadata={
            "description": "Search each part of a compound or comparative question ('X vs Y', "
            "'difference between X and Y', XとYの違い, ...) as well as the whole, keep each "
            "part's best chunk among the candidates, and let the critic judge each chunk "
            "against the part it answers (rule-based split, no model)."
        },
    )

    judged_compound: int = field(
        default=15,
        metadata={
            "description": "Candidates searched and judged for a question split into parts "
            "(at least the depth and 'judged'): the parts share them, so each gets a deeper "
            "look. Chosen on NFCorpus dev compound questions (15 against 10: a relevant "
            "chunk of both halves handed over for 0.487 against 0.388 of 80). Ignored when "
            "k is set or split_compound is off."
        },
    )

    overview: bool = field(
        default=True,
        metadata={
            "description": "Hand an overview question ('what have I written about X', 'which "
            "tools ...', 'X: a, b and c'; ragbrain.query.overview) the best chunk of each "
            "note the critic keeps, notes in the order of their scores, up to the deepest "
            "tier's count, from 'judged_overview' candidates, instead of the hand-over rule's "
            "one answering note. Ignored when k is set."
        },
    )

    overview_share: float = field(
        default=0.25,
        metadata={
            "description": "An overview question's critic cut as a share of the critic's, in "
            "[0, 1]: several notes answer it, each less closely than one note answers a "
            "pointed question. Fit leave-one-folder-out on the English notes folders' fit "
            "splits (docs/decisions/overview-questions.md). Ignored when k is set or "
            "overview is off."
        },
    )

    judged_overview: int = field(
        default=20,
        metadata={
            "description": "Candidates searched and judged for an overview question (at least "
            "the depth and 'judged'). Ignored when k is set or overview is off."
        },
    )

    abstain: AbstainLevel = field(
        default="on",
        metadata={
            "description": "Refusal: 'on' hands over nothing, saying why, when the question "
            "is off-topic for the store (its best distance is above the cut the store learnt "
            "at ingest from a bank of general questions, or it is written in a script an "
            "English-only store cannot read); 'strict' also refuses when the answer seems "
            "missing though its topic is there (a lower cut, and the critic's, the best "
            "distance's and BM25's evidence agreeing that nothing fits), at a measured cost in "
            "false refusals (docs/quality.md); 'off' never refuses a non-empty search. "
            "True and False are read as 'strict' and 'off'."
        },
    )

    abstain_thresholds: AbstainThresholds | None = field(
        default=None,
        metadata={
            "description": "The cuts 'abstain' applies (critic below, distance above, BM25 "
            "coverage below); None uses the ones the critic ships for the store's model. "
            "`ragbrain eval --lodo` sets a fold's own."
        },
    )

    dense_share: float = field(
        default=DENSE_SHARE,
        metadata={
            "description": "The dense side's share of the hybrid fusion, in [0, 1] (the rest "
            "is BM25's, weighed by how much of the query it matches). The default was chosen "
            "on every shared data set's train/dev queries; `ragbrain eval --lodo` sets a "
            "fold's own."
        },
    )

    dense_languages: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "description": "Query languages ('en', 'ja', 'th', 'other', 'none') whose dense "
            "ranking counts in hybrid fusion; a query with any other script in it keeps "
            "BM25's order. None: only "
            "English for the English-only default model, every language for other models."
        },
    )

    def __post_init__(self) -> None:
        """Refuse settings that would make the pipeline misbehave, naming the field."""
        if self.gate_threshold is not None and not 0.0 <= self.gate_threshold <= 2.0:
            raise InvalidInputError(
                f"gate_threshold must be a cosine distance in [0, 2], got {self.gate_threshold}."
            )
        tiers = self.depth_tiers
        if len(tiers) != 3 or any(check_k(t, name="depth_tiers") is None for t in tiers):
            raise InvalidInputError(f"depth_tiers must be three depths, got {tiers!r}.")
        if list(tiers) != sorted(tiers):
            raise InvalidInputError(f"depth_tiers must not decrease, got {tiers!r}.")
        if len(self.tier_scores) != 2 or self.tier_scores[0] > self.tier_scores[1]:
            raise InvalidInputError(
                f"tier_scores must be two rising scores, got {self.tier_scores!r}."
            )
        if self.critic_threshold is not None and not 0.0 <= self.critic_threshold <= 1.0:
            raise InvalidInputError(
                f"critic_threshold must be in [0, 1] or None, got {self.critic_threshold}."
            )
        object.__setattr__(self, "abstain", check_abstain(self.abstain))
        cuts: object = self.abstain_thresholds
        if isinstance(cuts, dict):  # a context given as JSON (Studio, a LangGraph server)
            cuts = AbstainThresholds.from_record(cuts, "abstain_thresholds")
            object.__setattr__(self, "abstain_thresholds", cuts)
        if cuts is not None and not isinstance(cuts, AbstainThresholds):
            raise InvalidInputError(
                f"abstain_thresholds must be AbstainThresholds or None, got {cuts!r}."
            )
        if not 0.0 <= self.overview_share <= 1.0:
            raise InvalidInputError(f"overview_share must be in [0, 1], got {self.overview_share}.")
        if not 0.0 <= self.dense_share <= 1.0:
            raise InvalidInputError(f"dense_share must be in [0, 1], got {self.dense_share}.")
        check_k(self.k)
        check_k(self.judged, name="judged")
        check_k(self.judged_compound, name="judged_compound")
        check_k(self.judged_overview, name="judged_overview")
        if self.search_mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"search_mode must be one of {SEARCH_MODES}, got {self.search_mode!r}."
            )


def context_of(runtime: Runtime[RetrievalContext]) -> RetrievalContext:
    """The run's knobs; the defaults when the caller passed none (a bare ``graph.invoke``)."""
    return runtime.context if runtime.context is not None else RetrievalContext()
