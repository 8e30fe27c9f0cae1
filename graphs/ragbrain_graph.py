"""What LangGraph Studio serves: the corrective retrieval graph over the default store.

The store is $RAGBRAIN_STORE (or ~/.local/share/ragbrain/store); without one, the bundled
sample notes. The per-run knobs (gate threshold, depth tiers, critic threshold, k) are the
graph's context schema, so Studio shows them with their descriptions.
"""

from ragbrain import default_graph

graph = default_graph()
