"""``python -m acid_core.cli``: the same as the ``acidflow`` console script."""

from __future__ import annotations

import sys

from acid_core.cli import main

sys.exit(main())
