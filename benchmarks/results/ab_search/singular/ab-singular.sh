#!/bin/sh
cd /work/old && PYTHONPATH=/work/old/src exec /work/main/.venv/bin/python -m latentchess uci --engine ab
