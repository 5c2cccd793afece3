#!/bin/sh
cd /work/hy && OMP_NUM_THREADS=1 PYTHONPATH=/work/hy/src exec /work/main/.venv/bin/python -m latentchess uci --engine hybrid:mode=order
