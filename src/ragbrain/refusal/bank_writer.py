"""``python -m ragbrain.refusal.bank_writer``: write the general questions' vectors that the
package ships (``refusal.shipped``), for every shipped model under both backends."""

from __future__ import annotations

import os


def main() -> None:
    """Write the files of every shipped model under both backends."""
    from ragbrain.models import embeddings as models
    from ragbrain.models.profiles import profiles
    from ragbrain.paths import BACKEND_ENV
    from ragbrain.refusal.offtopic import bank
    from ragbrain.refusal.shipped import write

    for backend in ("onnx", "torch"):
        os.environ[BACKEND_ENV] = backend
        models.default_embeddings.cache_clear()
        models.e5_embeddings.cache_clear()
        for profile in profiles():
            path = write(models.embeddings_for(profile.name), profile.name, bank())
            print(f"{path.name}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
