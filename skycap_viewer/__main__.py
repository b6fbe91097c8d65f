"""`python -m skycap_viewer` is the `skycap-viewer` command."""

import sys

from skycap_viewer.cli import main

sys.exit(main())
