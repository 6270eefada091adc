"""The demo platform: ``make run`` and ``make up`` (``python -m demo.run_platform run|up``).

Not part of the engine (``acid_core`` never imports it) nor of the wheel: it builds the demo
warehouse and drives the real ``airflow`` command over ``dags/`` and ``plugins/``, like the tests
in ``tests/integration`` do.
"""
