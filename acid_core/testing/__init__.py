"""Test support that ships with acid_core: hypothesis strategies, builders, demo data."""
