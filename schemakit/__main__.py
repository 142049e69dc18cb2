"""``python -m schemakit``: the same as the ``schemakit`` console script."""

from schemakit.cli import main

raise SystemExit(main())
