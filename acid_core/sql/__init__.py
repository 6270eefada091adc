"""The SQL front end: Hive SQL parsed with sqlglot, executed against the ACID engine."""
