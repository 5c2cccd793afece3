"""Short SupCon runs of GAB encoder variants on one thread: which recipe learns, which collapses.

A collapsed encoder maps every position to one point, where the SupCon loss with one positive per
anchor sits at log(2 x 128 - 1) = 5.541 (``benchmarks/results/gab_encoder/gab_probes.md``)::

    python benchmarks/gab_probe.py --cache data/all-cache --out runs/probe/base-sgd --lr 0.03
    python benchmarks/gab_probe.py --cache data/all-cache --out runs/probe/adamw \\
        --optimizer adamw --lr 0.001
    python benchmarks/gab_probe.py --cache data/all-cache --out runs/probe/nobias \\
        --set position=none

``--set KEY=VALUE`` overrides a field of the ``gab-micro`` config (``pool=attention``,
``head=mlp``, ``position=none``, ...); ``--zero-projection-bias`` and ``--init-scale`` change the
projection's initialisation. Prints the training loss every 40 steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

from latentchess.cli import main as latentchess_main
from latentchess.models import config as model_configs
from latentchess.models import gab_encoder


def _value(text: str) -> object:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, required=True, help="a training cache")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    p.add_argument("--lr", type=float, default=0.03)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--zero-projection-bias", action="store_true")
    p.add_argument("--init-scale", type=float, default=None)
    args = p.parse_args()

    overrides = {k: _value(v) for k, v in (item.split("=", 1) for item in args.set)}
    base = model_configs.GAB_ENCODER_CONFIGS["gab-micro"]
    model_configs.GAB_ENCODER_CONFIGS["gab-probe"] = dataclasses.replace(
        base, name="gab-probe", **overrides
    )
    if args.init_scale is not None:
        gab_encoder._PROJECTION_INIT_SCALE = args.init_scale
    if args.zero_projection_bias:
        original = gab_encoder.GabEncoder.__init__

        def init(self: gab_encoder.GabEncoder, config: model_configs.GabEncoderConfig) -> None:
            original(self, config)
            with torch.no_grad():
                self.projection.bias.zero_()

        gab_encoder.GabEncoder.__init__ = init  # type: ignore[method-assign]

    code = latentchess_main(
        [
            "train", "--data", str(args.cache), "--out", str(args.out),
            "--model-config", "gab-probe", "--positives", "1", "--batch-size", "128",
            "--optimizer", args.optimizer, "--lr", str(args.lr), "--schedule", "cosine",
            "--steps", str(args.steps), "--threads", "1", "--eval-every", "0",
            "--eval-positions", "1024", "--checkpoint-every", "100000", "--seed", "0",
            "--precision", "fp32", "--no-progress", "--log-every", "20",
        ]
    )  # fmt: skip
    for line in (args.out / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "train" and record["step"] % 40 == 0:
            print(f"step {record['step']:4d}  loss {record['loss']:.3f}")
    return code


if __name__ == "__main__":
    sys.exit(main())
