"""``python -m benchmarks.speed``: the speed benchmarks (see the package's docstring)."""

from benchmarks.speed import main

main()
