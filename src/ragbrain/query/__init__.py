"""What is read from the question itself: compound parts, filters and facets, type
matching, input checks."""
