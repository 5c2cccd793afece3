"""What training precision ``"auto"`` means: fp32 on CPU unless bf16 is measured faster.

On CUDA ``"auto"`` is bf16 autocast. On a CPU it is fp32, except on CPUs with native bfloat16
matrix units (AMX / AVX512-BF16), where a short probe times a few optimiser steps of the run's own
model and batch in fp32 and under bf16 autocast, and bf16 is used only when it is at least
:data:`MIN_SPEEDUP` times as fast. ``$LATENTCHESS_PRECISION`` overrides ``"auto"`` everywhere.

The decision is made once per run and cached in the run directory (:data:`PROBE_FILE`), so a
resumed run keeps its precision, and every rank of a data-parallel run uses rank 0's decision.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from latentchess.errors import LatentChessError
from latentchess.models.config import AnyEncoderConfig
from latentchess.models.gab_encoder import build_encoder
from latentchess.models.inference import auto_override, cpu_has_fast_bf16, resolve_precision

__all__ = ["MIN_SPEEDUP", "PROBE_FILE", "measure_step_seconds", "training_precision"]

MIN_SPEEDUP = 1.1
PROBE_FILE = "precision.json"
PROBE_STEPS = 3


def measure_step_seconds(
    config: AnyEncoderConfig,
    tokens: npt.NDArray[np.uint8],
    precision: str,
    steps: int = PROBE_STEPS,
) -> float:
    """Best wall time of one forward + backward + SGD step on ``tokens`` (after a warm-up step)."""
    torch.manual_seed(0)
    encoder = build_encoder(config).train()
    optimizer = torch.optim.SGD(encoder.parameters(), lr=1e-3)
    batch = torch.from_numpy(np.ascontiguousarray(tokens))
    best = float("inf")
    for step in range(steps + 1):
        began = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            z = encoder(batch)
        loss = (z.float() @ z.float().T).logsumexp(dim=1).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step:  # the first step pays for allocation and kernel selection
            best = min(best, time.perf_counter() - began)
    return best


def training_precision(
    requested: str,
    device: torch.device,
    config: AnyEncoderConfig,
    tokens: npt.NDArray[np.uint8],
    cache: Path | None,
) -> tuple[str, dict[str, Any]]:
    """Resolve a training precision (see the module docstring).

    Args:
        requested: ``"auto"``, ``"fp32"`` or ``"bf16"``.
        device: the training device.
        config: the model being trained (the probe times this architecture).
        tokens: a batch of the run's training tokens, as one rank embeds them per step.
        cache: the run's probe file (read when present, written after a probe); ``None``: no cache.

    Returns:
        ``(precision, record)``: ``"fp32"`` or ``"bf16"``, and how it was decided (for metrics).

    Raises:
        LatentChessError: the cached probe file is unreadable.
    """
    override = auto_override() if requested == "auto" else None
    if requested != "auto" or override is not None or device.type != "cpu":
        chosen = resolve_precision(override or requested, device)
        how = "requested" if requested != "auto" else ("environment" if override else device.type)
        return chosen, {"precision": chosen, "requested": requested, "decided_by": how}
    if cache is not None and cache.is_file():
        try:
            record = json.loads(cache.read_text(encoding="utf-8"))
            if record.get("model") == config.to_dict():
                return str(record["precision"]), record
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise LatentChessError(
                f"cannot read the precision probe {str(cache)!r}: {error}"
            ) from error
    if not cpu_has_fast_bf16():
        record = {
            "precision": "fp32",
            "requested": "auto",
            "decided_by": "cpu without native bf16 (bf16 not measured)",
        }
    else:
        fp32 = measure_step_seconds(config, tokens, "fp32")
        bf16 = measure_step_seconds(config, tokens, "bf16")
        chosen = "bf16" if fp32 / bf16 >= MIN_SPEEDUP else "fp32"
        record = {
            "precision": chosen,
            "requested": "auto",
            "decided_by": "probe",
            "probe": {
                "batch": len(tokens),
                "fp32_step_s": fp32,
                "bf16_step_s": bf16,
                "bf16_speedup": fp32 / bf16,
                "min_speedup": MIN_SPEEDUP,
            },
        }
    record["model"] = config.to_dict()
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        tmp.replace(cache)
    return str(record["precision"]), record
