"""The flight recorder's settings in every view (plan/flightrec.py): one folder per job, the names fr_trace
reads, the emptyDir in pods, and a descriptor's dump_dir checked like every other path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from ncclgen.cli import main
from ncclgen.load import descriptor
from ncclgen.pipeline import make_plan, request


def _env(cluster: str, target: str = "host") -> dict[str, str]:
    plan = make_plan(request(cluster, 1, None, None, (), False))
    if target == "pod":
        from ncclgen.plan.build import build

        plan = build(descriptor.load(descriptor.resolve(cluster)), plan.workload, 1, target="pod")
    return plan.env_dict()


def test_host_folder_is_per_job_on_each_node_without_a_dump_dir():
    env = _env("h100-ib")
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == "/tmp/ncclgen-fr-${SLURM_JOB_ID:-local}/nccl_trace_rank_"
    assert "TORCH_FR_BUFFER_SIZE" not in env  # PyTorch's default (2000) already records


def test_pod_folder_is_the_emptydir(capsys):
    assert _env("h100-ib", "pod")["TORCH_FR_DUMP_TEMP_FILE"] == "/tmp/ncclgen-fr/nccl_trace_rank_"
    assert main(["k8s", "--cluster", "h100-ib", "--kind", "rayjob"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    pods = [
        g["template"]["spec"]
        for d in docs
        if d["kind"] == "RayJob"
        for g in [d["spec"]["rayClusterSpec"]["headGroupSpec"], *d["spec"]["rayClusterSpec"]["workerGroupSpecs"]]
    ]
    assert pods
    for spec in pods:
        assert {"name": "ncclgen-fr", "emptyDir": {}} in spec["volumes"]
        mounts = spec["containers"][0]["volumeMounts"]
        assert {"name": "ncclgen-fr", "mountPath": "/tmp/ncclgen-fr"} in mounts


def _with_dump_dir(tmp_path: Path, value: str) -> Path:
    data = yaml.safe_load(Path(descriptor.resolve("local-ci")).read_text(encoding="utf-8"))
    data.setdefault("slurm", {})["dump_dir"] = value
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_dump_dir_puts_the_jobs_folder_there(tmp_path, capsys):
    path = _with_dump_dir(tmp_path, "/lustre/scratch/fr")
    assert main(["slurm", "--cluster", str(path), "--workload", "bench"]) == 0
    out = capsys.readouterr().out
    assert 'export TORCH_FR_DUMP_TEMP_FILE="/lustre/scratch/fr/${SLURM_JOB_ID:-local}/nccl_trace_rank_"' in out
    assert "one folder per node" not in out  # shared: the exit line names one folder
    assert main(["explain", "--cluster", str(path), "--workload", "bench"]) == 0
    assert (
        "FOLDER: /lustre/scratch/fr/${SLURM_JOB_ID:-local}, on slurm.dump_dir (every node)" in capsys.readouterr().out
    )


@pytest.mark.parametrize("bad", ["relative/fr", "/fr/$(id)", "/fr dir", "/fr;rm"])
def test_a_dump_dir_that_is_no_plain_absolute_path_is_refused(tmp_path, capsys, bad):
    path = _with_dump_dir(tmp_path, bad)
    rc = main(["slurm", "--cluster", str(path), "--workload", "bench"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "slurm.dump_dir" in err and "c.yaml:" in err, err


def test_a_pod_says_where_its_dumps_are_when_the_launch_ends(tmp_path, capsys, monkeypatch):
    """The pod's transport check (spec 'fr': the emptyDir) names the dumps a rank left, after the launch."""
    from ncclgen.jobside import transport
    from ncclgen.plan import transport as plan_transport
    from ncclgen.plan.build import build

    pod = build(descriptor.load(descriptor.resolve("h100-ib")), _plan_workload(), 1, target="pod")
    assert plan_transport.spec(pod)["fr"] == "/tmp/ncclgen-fr"
    assert "fr" not in plan_transport.spec(make_plan(request("h100-ib", 1, None, None, (), False)))  # Slurm: the script
    folder = tmp_path / "fr"
    folder.mkdir()
    spec = {
        "v": 1,
        "mode": "on",
        "debug_file": str(tmp_path / "nccl" / "%h.%p.log"),
        "nccl": "2.30.7",
        "fr": str(folder),
    }
    monkeypatch.setenv("NCCL_DEBUG", "WARN")  # nothing to check: only the dump line is tested here
    rank = f"open({str(folder / 'nccl_trace_rank_3')!r}, 'w').write('x'); raise SystemExit(1)"
    assert transport.run(spec, [sys.executable, "-c", rank]) == 1
    err = capsys.readouterr().err
    assert (
        f"ncclgen: flight recorder: node {transport.node_name()}: 1 dump(s) in {folder} (nccl_trace_rank_3...)" in err
    )


def _plan_workload():
    return make_plan(request("h100-ib", 1, None, None, (), False)).workload


def test_a_set_folder_is_quoted_as_data_and_gets_no_emptydir(capsys):
    """--set TORCH_FR_DUMP_TEMP_FILE moves the dumps: the exit line names that folder (quoted, no job id),
    and a pod gets no emptyDir at /tmp/ncclgen-fr, which nothing would write to."""
    assert main(["slurm", "--cluster", "h100-ib", "--set", "TORCH_FR_DUMP_TEMP_FILE=/scratch/my fr/p_"]) == 0
    out = capsys.readouterr().out
    assert "  local fr='/scratch/my fr'\n" in out and "one folder per node" not in out
    assert main(["k8s", "--cluster", "h100-ib", "--set", "TORCH_FR_DUMP_TEMP_FILE=/data/fr/x_"]) == 0
    assert "ncclgen-fr" not in capsys.readouterr().out
