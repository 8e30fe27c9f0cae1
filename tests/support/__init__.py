"""Fakes, fixture builders and helper processes shared by the unit and integration tests."""
