"""Saying "the notes do not have this": the evidence and the cuts behind an empty answer."""
