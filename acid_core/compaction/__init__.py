"""Compaction: the initiator's decisions, planning, the worker and the cleaner."""
