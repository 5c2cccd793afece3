#!/bin/sh
cd ../main && PYTHONPATH=src exec .venv/bin/python -m latentchess uci --engine ab
