"""Reasons re-derived from the sources they cite (issue 31 item 3); each of these fails on main 0ddb3a1."""

from __future__ import annotations

import dataclasses

from ncclgen import plan
from ncclgen.load import descriptor, workload
from ncclgen.plan import rules

H100 = descriptor.load_cluster("h100-ib")
BIG = workload.load_workload("verl-grpo-qwen3-235b-megatron")


def rule(rule_id: str) -> rules.Rule:
    return next(r for r in rules.load_rules() if r.id == rule_id)


def left_out(var: str) -> rules.NotEmitted:
    return next(n for n in rules.not_emitted() if n.var == var)


def with_gpu(model: str) -> descriptor.Descriptor:
    return dataclasses.replace(H100, node=dataclasses.replace(H100.node, gpu_model=model))


def test_gdr_level_default_is_p2c_not_pxb():
    n = left_out("NCCL_NET_GDR_LEVEL")
    assert "P2C" in n.reason and "2.29.2" in n.reason and "paths.cc:465" in n.source and "511" in n.source
    assert "the default (PXB)" not in n.reason


def test_roce_gid_reason_describes_the_auto_selection_since_2_21_5():
    r = rule("roce-gid-index")
    assert "2.21.5" in r.reason and "link-local" in r.reason and "RoCE v2" in r.reason
    assert "v2.21.5-1" in r.source and "v2.20.5-1" in r.source


def test_nvls_is_not_turned_off_for_every_megatron_workload():
    assert all(r.var != "NCCL_NVLS_ENABLE" for r in rules.load_rules())
    assert "NCCL_NVLS_ENABLE" not in plan.build(H100, BIG, 3).env_dict()
    assert "constants_ppo.py:27-32" in left_out("NCCL_NVLS_ENABLE").source


def test_cuda_device_max_connections_only_on_compute_capability_8_and_9():
    for model, expected in (("H100-SXM5-80GB", True), ("A100-SXM4-80GB", True), ("B200", False), ("GB200", False)):
        env = plan.build(with_gpu(model), BIG, 1).env_dict()
        assert ("CUDA_DEVICE_MAX_CONNECTIONS" in env) is expected, model
    assert "constants_ppo.py" in rule("megatron-max-connections").source


def test_min_ctas_reason_states_what_nccl_does_and_its_sm_cost():
    r = rule("min-ctas")
    assert "SM" in r.reason and "not a per-collective floor" in r.reason
    assert "enqueue.cc:2070-2094" in r.source and "init.cc:2190-2193" in r.source


def test_ib_qps_cites_only_a_file_that_sets_it():
    r = rule("ib-qps")
    assert "GCP" not in r.source and "a3-ultragpu" not in r.source and "Google" not in r.reason
    assert "hopper.conf:27" in r.source


def test_async_error_handling_cites_the_modes():
    r = rule("torch-async-error-handling")
    assert "ErrorHandlingMode" in r.source and "ProcessGroupNCCL.hpp:167-172" in r.source
