"""Names a container image sets as a label of what it installs are reported as harmless, not as errors:
NVIDIA's CUDA images export NCCL_VERSION, and `ncclgen doctor` failed every node in one (seen on a real H200,
tests/data/device/check-h200.log: 'fail env.NCCL_VERSION NG001 ... remove it')."""

from ncclgen.load import descriptor
from ncclgen.node import doctor


def test_doctor_reports_an_images_nccl_version_as_info_not_fail():
    desc = descriptor.load(descriptor.resolve("h100-ib"))
    checks = {c.check: c for c in doctor.check_env(desc, {"NCCL_VERSION": "2.28.9", "NCCL_FOO": "1"})}
    assert checks["env.NCCL_VERSION"].status == "info"
    assert "NVIDIA's CUDA container images" in checks["env.NCCL_VERSION"].detail
    assert checks["env.NCCL_FOO"].status == "fail"  # an unknown NCCL_ name is still an error


def test_the_device_run_saw_the_failure_this_fixes():
    from pathlib import Path

    log = (Path(__file__).parent / "data" / "device" / "check-h200.log").read_text()
    assert "fail    env.NCCL_VERSION  NG001" in log


def test_build_time_names_are_info_with_who_reads_them():
    from ncclgen.lint import lint_text

    text = "export NCCL_HOME=/opt/nccl\nexport NCCL_ROOT=/opt/nccl\nexport NCCL_LIB_DIR=/opt/nccl/lib\n"
    found = {f.variable: f for f in lint_text(text, "job.sh", None)}
    assert {n: f.severity for n, f in found.items()} == {
        "NCCL_HOME": "info",
        "NCCL_ROOT": "info",
        "NCCL_LIB_DIR": "info",
    }
    assert "FindNCCL" in found["NCCL_ROOT"].message and "NCCL_PROTO" not in found["NCCL_ROOT"].fix  # no did-you-mean
