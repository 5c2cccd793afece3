"""``python -m latentchess`` (also what ``torchrun -m latentchess train`` runs)."""

import sys

from latentchess.cli import main

sys.exit(main())
