"""The machine's matrix-multiply rate, the yardstick benchmark rates are divided by."""

from __future__ import annotations

import time

import torch


def gemm_gflops(dtype: torch.dtype, size: int, seconds: float) -> tuple[float, int]:
    """Best GFLOP/s of an ``n x n`` matmul over ``seconds``, and ``n``.

    ``n`` grows from 256 to ``size`` while one call stays under 0.1 s: emulated bfloat16 on CPUs
    without it is ~100x slower than float32, so its matrices stay small.
    """
    n = 256
    while True:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        tick = time.perf_counter()
        a @ b
        if n >= size or time.perf_counter() - tick > 0.1:
            break
        n *= 2
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        tick = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - tick) / 1e9)
    return best, n
