#!/bin/sh
cd /work/hy && PYTHONPATH=/work/hy/src exec /work/main/.venv/bin/python -m latentchess uci --engine ab
