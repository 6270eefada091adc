"""acidflow's Airflow 3 plugin: hooks, operators, sensors, triggers, notifiers and the backlog page.

::

    config.py     acidflow.yaml + ACIDFLOW_* variables, validated
    hooks.py      AcidMetastoreHook, AcidWarehouseHook
    backlog.py    per table/partition counts, bytes, the initiator's decision; Hive's metric names;
                  the history samples (recorded by the sensor) and their trends
    trends.py     pure: human units, time to a threshold, server-side SVG sparklines
    requests.py   ALTER TABLE ... COMPACT and the compaction form
    triggers.py   AcidBacklogTrigger (the triggerer waits, not a worker)
    sensors.py    AcidBacklogSensor (deferrable), the compaction-requests Asset
    operators.py  plan_compactions, AcidCompactionOperator, check_compactions, AcidCleanerOperator
    notifiers.py  alerts (backlog, stuck/failing compactions, blocked cleaner): log, webhook, email or
                  any Airflow notifier; routing per table owner
    web.py        the backlog page and its API (FastAPI, behind Airflow's authentication)
    plugin.py     the AirflowPlugin registering web.py and the external view

Module-level imports stay light (no pyarrow, sqlalchemy, kazoo, pyspark): Airflow imports the
plugins folder in every process.
"""

from __future__ import annotations
