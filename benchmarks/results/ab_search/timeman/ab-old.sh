#!/bin/sh
cd ../old && PYTHONPATH=../old/src exec .venv/bin/python -m latentchess uci --engine ab
