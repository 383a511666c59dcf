"""PyTorch 2.15's two 'nccl' classes (issue 31 item 2): lint judges a name one class alone reads against the
class the job builds (the cluster's PyTorch and TORCH_DIST_USE_NCCL2); each case fails on main 0ddb3a1."""

from __future__ import annotations

import dataclasses

from ncclgen.lint import lint_pairs
from ncclgen.load import descriptor

BASE = descriptor.load_cluster("h100-ib")


def on(torch: str) -> descriptor.Descriptor:
    return dataclasses.replace(BASE, software=dataclasses.replace(BASE.software, torch=torch))


def found(env: dict[str, str], torch: str) -> list[tuple[str, str, str]]:
    pairs = [(k, v, i + 1) for i, (k, v) in enumerate(env.items())]
    return [(f.variable, f.code, f.fix) for f in lint_pairs(pairs, on(torch)) if f.code == "NG011"]


def test_legacy_nan_check_under_the_2_15_default():
    assert found({"TORCH_NCCL_NAN_CHECK": "1"}, "2.15.0") == [
        ("TORCH_NCCL_NAN_CHECK", "NG011", "use TORCH_DIST_NAN_CHECK=1")
    ]
    assert found({"TORCH_DIST_USE_NCCL2": "0", "TORCH_NCCL_NAN_CHECK": "1"}, "2.15.0") == []
    assert found({"TORCH_NCCL_NAN_CHECK": "1"}, "2.14.1") == []  # 2.14's default is the legacy class
    assert found({"TORCH_NCCL_NAN_CHECK": "1"}, "2.13.0") == []


def test_fr_name_under_the_legacy_class():
    env = {"TORCH_DIST_USE_NCCL2": "0", "TORCH_FR_DUMP_ON_TIMEOUT": "1"}
    assert found(env, "2.15.0") == [("TORCH_FR_DUMP_ON_TIMEOUT", "NG011", "use TORCH_NCCL_DUMP_ON_TIMEOUT=1")]
    assert found({"TORCH_FR_DUMP_ON_TIMEOUT": "1"}, "2.15.0") == []
    assert found({"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, "2.15.0") == []  # every class and release reads it
