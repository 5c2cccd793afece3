#!/bin/sh
cd /work/main && PYTHONPATH=/work/main/src exec /work/main/.venv/bin/python -m latentchess uci --engine ab
