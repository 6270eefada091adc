"""Registers the compaction statements (issue 6); they live in ``acid_core.compaction.sql_statements``.

ALTER TABLE .. COMPACT, SHOW COMPACTIONS and ABORT COMPACTIONS; this module is listed in
``registry.EXTENSION_MODULES`` and only imports the module that registers them.
"""

from __future__ import annotations

import acid_core.compaction.sql_statements  # noqa: F401 - importing registers the statements
