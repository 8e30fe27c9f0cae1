"""Names the store is read and written by: the collection, its metadata keys, call sizes."""

COLLECTION = "ragbrain"
LOCK_FILE = "ragbrain.lock"
MODEL_KEY = "ragbrain:embedding_model"
DIMENSION_KEY = "ragbrain:dimension"
GATE_KEY = "ragbrain:gate_threshold"  # written by `ragbrain calibrate`
GATE_SOURCE_KEY = "ragbrain:gate_source"
#: The off-topic cut ``ragbrain.refusal.offtopic`` learns at ingest (JSON).
OFFTOPIC_KEY = "ragbrain:offtopic"
#: Chroma caps how many records one call may carry.
BATCH = 1000
#: Records read per call when listing a whole store. Chroma reads a call's metadata with one
#: SQL statement naming every id, and SQLite refuses more than 32,766 variables: an unpaged
#: listing fails on a store of about 33k chunks or more ("too many SQL variables").
PAGE = 5000
