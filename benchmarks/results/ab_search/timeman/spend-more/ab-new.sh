#!/bin/sh
cd /work/tm && PYTHONPATH=/work/tm/src exec /work/main/.venv/bin/python -m latentchess uci --engine ab
