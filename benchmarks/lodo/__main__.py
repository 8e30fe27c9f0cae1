"""``python -m benchmarks.lodo``: the leave-one-domain-out run (see the package's docstring)."""

from benchmarks.lodo import main

main()
