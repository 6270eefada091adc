"""Spark jobs submitted with spark-submit; each module has main(argv) -> int."""
