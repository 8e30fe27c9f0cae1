"""Evaluation on BEIR-layout data sets: loading, cached stores, metrics and reports."""
