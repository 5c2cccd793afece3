"""Process-group plumbing for data-parallel training (``torchrun``), a no-op in one process.

``torchrun --nproc_per_node=K [--nnodes=N ...] -m latentchess train ...`` sets ``WORLD_SIZE``,
``RANK``, ``LOCAL_RANK`` and the rendezvous variables; :func:`init_distributed` reads them, joins
the group (NCCL on CUDA, gloo on CPU) and picks the device of the local rank. Every rank embeds its
share of the global batch; :meth:`DistContext.gather` concatenates the embeddings of all ranks
with ``torch.distributed.nn.functional.all_gather``, whose backward pass sums the gradients of
each rank's slice, so the contrastive loss sees the whole global batch as negatives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from latentchess.errors import LatentChessError

__all__ = ["DistContext", "init_distributed", "resolve_device"]


def resolve_device(device: str, local_rank: int = 0) -> torch.device:
    """``"auto"``: the local rank's GPU when CUDA is available, else the CPU.

    ``"cuda"`` without an index also means the local rank's GPU.
    """
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    resolved = torch.device(device)
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise LatentChessError(f"device {device!r} requested but CUDA is not available")
        if resolved.index is None:
            resolved = torch.device("cuda", local_rank)
    return resolved


@dataclass
class DistContext:
    """Where this process stands in the run.

    Attributes:
        rank: global rank (0 writes logs, checkpoints and the model).
        world_size: number of processes.
        local_rank: rank on this node (selects the GPU).
        device: this process's device.
        owns_group: whether this context created the process group (and destroys it).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")  # noqa: RUF009 - immutable value
    owns_group: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def gather(self, tensor: Tensor) -> Tensor:
        """Concatenate every rank's ``(n, ...)`` tensor along dim 0, keeping gradients."""
        if not self.distributed:
            return tensor
        from torch.distributed.nn.functional import all_gather

        return torch.cat(all_gather(tensor.contiguous()), dim=0)  # (world * n, ...)

    def any(self, flag: bool) -> bool:
        """True on every rank when ``flag`` is true on any rank (ranks stop together)."""
        if not self.distributed:
            return flag
        value = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item() > 0)

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (picklable objects; used for RNG states)."""
        if not self.distributed:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.distributed:
            if self.device.type == "cuda":
                dist.barrier(device_ids=[self.device.index])
            else:
                dist.barrier()

    def close(self) -> None:
        """Leave the process group if this context joined it."""
        if self.owns_group and dist.is_initialized():
            dist.destroy_process_group()
            self.owns_group = False


def init_distributed(device: str = "auto") -> DistContext:
    """Join the process group described by the ``torchrun`` environment, if any.

    Args:
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    resolved = resolve_device(device, local_rank)
    if resolved.type == "cuda":
        # TF32 matrix units for float32 products on GPUs that have them (Ampere and later).
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if world_size <= 1:
        return DistContext(device=resolved)
    if resolved.type == "cuda":
        torch.cuda.set_device(resolved)
    owns = False
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if resolved.type == "cuda" else "gloo")
        owns = True
    return DistContext(
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        device=resolved,
        owns_group=owns,
    )
