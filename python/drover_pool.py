"""Compatibility shim: the pooled-child module is now drover.pool.

`import drover_pool` keeps working with PYTHONPATH pointing at python/ or
with the package installed (pip install ./python)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from drover.pool import *  # noqa: F401,F403,E402
from drover.pool import Context, ProtocolError, Retry, serve  # noqa: F401,E402

if __name__ == "__main__":
    from drover.pool import main
    main()
