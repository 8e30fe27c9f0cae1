"""`ragbrain doctor`: check a store and say what is wrong with it and how to fix it.

``diagnose`` (``run``) opens the store and runs the checks in order; the checks of the
vectors, of the chunks and of the lexical index live in the modules beside it.
"""

from ragbrain.doctor.finding import Finding
from ragbrain.doctor.run import diagnose

__all__ = ["Finding", "diagnose"]
