"""The flight recorder in a real Slurm job (local 2-node cluster, CPU): a torchrun rank that never joins a
collective leaves the other rank's dump in the job's folder (slurm.dump_dir/JOB_ID), fr_trace's loader
reads it, and the job's log says where it is.

Torch on CPU runs gloo, which records collectives but does not dump on a timeout (tests/e2e/fr_never_joins.py
says what the stand-in does instead); a real NCCL timeout dump is tests/data/device/ (test_device_fixtures)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ncclgen.load import descriptor

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
RANK = ROOT / "tests" / "e2e" / "fr_never_joins.py"


def _files(tmp_path: Path, dump_dir: Path) -> tuple[Path, Path]:
    data = yaml.safe_load(Path(descriptor.resolve("local-ci")).read_text(encoding="utf-8"))
    data["name"] = "fr-shared"
    data["slurm"]["dump_dir"] = str(dump_dir)
    cluster = tmp_path / "fr-shared.yaml"
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    wl = tmp_path / "fr.yaml"
    wl.write_text(
        yaml.safe_dump(
            {
                "name": "fr-never-joins",
                "description": "a rank that never joins a collective (flight recorder e2e)",
                "launcher": "torchrun",
                "framework": "torch",
                "nodes": 2,
                "time": "00:10:00",
                "command": [sys.executable, str(RANK)],
            }
        ),
        encoding="utf-8",
    )
    return cluster, wl


def _render(tmp_path: Path, cluster: Path, wl: Path) -> Path:
    script = tmp_path / "job.sh"
    argv = ["slurm", "--cluster", str(cluster), "--tier", "1", "--workload", str(wl), "--partition", "debug"]
    argv += ["--no-preflight", "--transport-check", "off", "-o", str(script)]
    r = subprocess.run(
        [sys.executable, "-m", "ncclgen", *argv], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    return script


def _submit(cluster, script: Path, tmp_path: Path, monkeypatch, timeout: float) -> tuple[str, object, str]:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    monkeypatch.setenv("FR_TIMEOUT_S", "3")
    job = cluster.sbatch(script, cwd=tmp_path)
    result = cluster.wait(job, timeout=timeout)
    log_path = tmp_path / f"ncclgen-{job}.out"
    log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else "(no log)"
    return job, result, log


def test_a_rank_that_never_joins_leaves_a_dump_in_the_jobs_folder(slurm_cluster, tmp_path, monkeypatch):
    dump_dir = tmp_path / "shared-fr"
    dump_dir.mkdir()
    script = _render(tmp_path, *_files(tmp_path, dump_dir))
    assert (
        f'export TORCH_FR_DUMP_TEMP_FILE="{dump_dir}/${{SLURM_JOB_ID:-local}}/nccl_trace_rank_"' in script.read_text()
    )
    job, result, log = _submit(slurm_cluster, script, tmp_path, monkeypatch, 180)
    assert result.state == "FAILED", result.raw + "\n" + log
    folder = dump_dir / job
    assert sorted(p.name for p in folder.iterdir()) == ["nccl_trace_rank_0"], log
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    loader = __import__("torch.distributed.flight_recorder.components.loader", fromlist=["read_dump"])
    dump = loader.read_dump("nccl_trace_rank_", str(folder / "nccl_trace_rank_0"))
    assert [(e["profiling_name"], e["state"]) for e in dump["entries"]][-1] == ("gloo:all_reduce", "scheduled")
    assert dump["entries"][-1]["timeout_ms"] == 3000
    assert (
        f"ncclgen: flight recorder: ranks dumped their last collectives to {folder}; read them with "
        f"python3 -m torch.distributed.flight_recorder.fr_trace -j {folder}"
    ) in log, log


def test_an_unwritable_dump_dir_stops_the_job_with_one_line(slurm_cluster, tmp_path, monkeypatch):
    script = _render(tmp_path, *_files(tmp_path, Path("/proc/ncclgen-no-such-dir")))
    job, result, log = _submit(slurm_cluster, script, tmp_path, monkeypatch, 120)
    assert result.state == "FAILED", result.raw + "\n" + log
    assert f"cannot write the flight recorder's folder /proc/ncclgen-no-such-dir/{job} (slurm.dump_dir)" in log, log
    assert "rank 0:" not in log, log
