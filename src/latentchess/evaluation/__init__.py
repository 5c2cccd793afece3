"""Evaluation: matches against real engines, Elo fits, puzzles and EPD suites."""
