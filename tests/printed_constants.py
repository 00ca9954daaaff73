"""Constants another module imports by name (tests/test_printed_imports.py)."""

import numpy as np

SCALE = 1.5
OFFSET = np.array([0.5, -1.0, 2.0])
