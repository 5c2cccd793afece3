#!/bin/sh
cd ../hy && PYTHONPATH=../hy/src exec .venv/bin/python -m latentchess uci --engine ab
