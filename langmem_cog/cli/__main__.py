"""``python -m langmem_cog.cli``: the ``langmem-cog`` command."""

import sys

from langmem_cog.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
