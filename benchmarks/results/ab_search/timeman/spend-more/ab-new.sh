#!/bin/sh
cd ../tm && PYTHONPATH=../tm/src exec .venv/bin/python -m latentchess uci --engine ab
