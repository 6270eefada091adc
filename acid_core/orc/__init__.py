"""ORC event files: the ACID event schema, the writer and merge-on-read."""
