#!/bin/sh
cd ../hy && OMP_NUM_THREADS=1 PYTHONPATH=../hy/src exec .venv/bin/python -m latentchess uci --engine hybrid:mode=order
