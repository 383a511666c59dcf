"""explain and diff state exactly the binding each launcher applies (issue 20 item 4).

torchrun ranks run under numactl --physcpubind/--membind (plan/launch.py bind_wrapper); Ray GPU tasks and
actors get CPU affinity from the worker hook (jobside/raybind.py: os.sched_setaffinity) and no memory
policy, so neither text may claim numactl or --membind for a Ray workload.
"""

from __future__ import annotations

from ncclgen.cli import main

RAY_AFFINITY = "each Ray GPU task or actor: CPU affinity to its GPU's <cpus> (Ray worker hook, sched_setaffinity)"
RAY_NO_MEM = "no memory binding: the Ray hook sets no memory policy, so descriptor bind_memory: true is not applied"
TORCHRUN = "each rank runs under: numactl --physcpubind=<cpus> --membind=<numa>"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def binding_lines(explain: str) -> list[str]:
    """The lines between the binding table and LAUNCH that say what is applied."""
    section = explain.split("BINDING (", 1)[1].split("\nLAUNCH\n", 1)[0]
    return [ln.strip() for ln in section.splitlines() if ln.startswith("  each") or ln.startswith("  no ")]


def test_explain_ray_says_cpu_affinity_and_no_memory_binding(capsys):
    code, out, _ = cli(capsys, "explain", "--cluster", "h100-ib", "--tier", "3", "--workload", "verl-grpo-qwen2-7b")
    assert code == 0
    assert binding_lines(out) == [RAY_AFFINITY, RAY_NO_MEM]
    assert "numactl" not in out.split("BINDING (", 1)[1].split("\nLAUNCH\n", 1)[0]


def test_explain_ray_with_bind_memory_false_gives_that_reason(capsys):
    code, out, _ = cli(capsys, "explain", "--cluster", "aws-p5", "--tier", "3", "--workload", "verl-grpo-qwen2-7b")
    assert code == 0
    assert binding_lines(out) == [RAY_AFFINITY, "no memory binding: descriptor bind_memory is false"]


def test_explain_torchrun_says_numactl_with_membind(capsys):
    code, out, _ = cli(capsys, "explain", "--cluster", "h100-ib", "--tier", "3", "--workload", "verl-sft")
    assert code == 0
    assert binding_lines(out) == [TORCHRUN]


def test_diff_names_what_each_launcher_applies(capsys):
    code, out, _ = cli(capsys, "diff", "--cluster", "h100-ib", "--tier", "1", "--vs-tier", "3")  # verl GRPO: Ray
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("~ binding:")]
    assert line == f"~ binding: off -> on ({RAY_AFFINITY}; {RAY_NO_MEM}; `ncclgen explain` shows the map)"
    code, out, _ = cli(capsys, "diff", "--tier", "3", "--vs-tier", "1", "--workload", "verl-sft")
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("~ binding:")]
    assert line == f"~ binding: on -> off ({TORCHRUN}; `ncclgen explain` shows the map)"
