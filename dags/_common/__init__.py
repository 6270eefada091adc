"""Shared wiring for the acidflow DAG files."""
