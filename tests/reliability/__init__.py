"""The reliability soak (issue 11): a model-based check of acidflow under concurrency and kill -9.

``model``       the pure Python model of the table and the writer's crash-safe journal
``writer``      the writer: random INSERT/UPDATE/DELETE/MERGE/streaming and leases, checked after
                every step against the model (used in-process and as an OS process)
``actors``      ``python -m tests.reliability.actors writer|compactor|cleaner``: the OS processes
``soak``        the driver: starts the processes, SIGKILLs them at random, recovers, checks
``test_regressions``  the minimal reproductions of the bugs the soak found, kept as regression tests
"""
