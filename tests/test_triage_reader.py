"""The reader's anchors cover every literal a signature, marker or fact needs: a line a signature could
match is never skipped by the byte-level pre-filter."""

from __future__ import annotations

import json

import pytest

from ncclgen.triage import reader


def test_every_key_holds_an_anchor():
    missing = [k for k in reader.all_keys() if not any(a in k for a in reader.anchors())]
    assert missing == []


def test_job_script_is_read_for_its_plan_only(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n# Regenerate: ncclgen slurm --cluster h100-ib --tier 3\n"
        "python - <<'EOF'\nprint('NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable')\n"
        "raise RuntimeError('Watchdog caught collective operation timeout')\nEOF\n"
    )
    lines = list(reader.scan([script]))
    assert [ln.text for ln in lines] == ["# Regenerate: ncclgen slurm --cluster h100-ib --tier 3"]


def test_grep_and_python_engines_give_the_same_lines():
    """The fast path (one `grep -F` pass) and the bytes.find fallback keep the same lines, numbers included."""
    from pathlib import Path

    from ncclgen.triage import grepscan

    files = sorted((Path(__file__).parent / "data" / "triage").glob("*.log"))
    python = [(ln.file, ln.lineno, ln.text) for ln in reader.scan(files, engine="python")]
    assert len(python) > 100
    if grepscan.available():
        assert [(ln.file, ln.lineno, ln.text) for ln in reader.scan(files, engine="grep")] == python


def test_a_log_copied_from_a_web_page_reads_its_no_break_spaces_as_spaces(tmp_path):
    """A thread's log pasted through a browser carries U+00A0 where NCCL printed spaces; its lines still match."""
    nbsp = "\u00a0"
    text = f"h:1:2 [0] NCCL{nbsp}WARN{nbsp}Call to connect returned Connection refused\nplain line\n"
    (tmp_path / "web.log").write_text(text, encoding="utf-8")
    from ncclgen.triage import grepscan

    for engine in ("python", "grep") if grepscan.available() else ("python",):
        lines = [(ln.lineno, ln.text) for ln in reader.scan([tmp_path / "web.log"], engine=engine)]
        assert lines == [(1, "h:1:2 [0] NCCL WARN Call to connect returned Connection refused")], engine


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_colour_codes_are_taken_off_so_the_program_s_prefix_starts_the_line(tmp_path, engine):
    """A log captured from a terminal keeps ESC[..m around a line (glog, Ray's prefixes): NCCL's host:pid:tid still
    names the node."""
    warn = "gpu1:10:11 [0] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes"
    log = tmp_path / "colour.log"
    log.write_text("\x1b[31m" + warn + "\x1b[0m\n")
    (line,) = reader.scan([log], engine=engine)
    assert line.text == warn


@pytest.mark.parametrize("engine", ["python", "grep"])
def test_a_node_s_own_copy_of_a_container_s_log(tmp_path, engine):
    """/var/log/pods (the CRI format: time, stream, F or P) and Docker's json-file driver: the line as the program
    printed it, with the collector's time."""
    warn = "gpu1:10:11 [0] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes"
    cri = tmp_path / "0.log"
    cri.write_text(f"2025-03-01T10:00:00.123456789Z stderr F {warn}\n")
    docker = tmp_path / "c-json.log"
    docker.write_text(json.dumps({"log": warn + "\n", "stream": "stderr", "time": "2025-03-01T10:00:00.5Z"}) + "\n")
    for log in (cri, docker):
        (line,) = reader.scan([log], engine=engine)
        assert line.text == warn and line.stamp.startswith("2025-03-01T10:00:00."), log.name
    cut = tmp_path / "cut-json.log"  # a JSON line the reader's cap cut short is read as it is
    cut.write_text('{"log":"' + warn + "\n")
    (line,) = reader.scan([cut], engine=engine)
    assert line.text.startswith('{"log":"gpu1')


def test_a_log_collectors_prefixes_are_taken_off_and_its_time_kept(tmp_path):
    """`kubectl logs --timestamps` (RFC 3339 with nanoseconds) and docker compose ('worker-1  | ') put their prefix
    before NCCL's own: the line reads as the program printed it, classified as without the prefix, and the time is
    the collector's. A program's own 'name | text' without an instance number is left as it is."""
    import json

    from ncclgen.triage import run

    warn = "gpu1:10:11 [0] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-x to 9637892 bytes"
    bare = tmp_path / "bare.log"
    bare.write_text(warn + "\n")
    for prefix in ("2025-03-01T10:00:00.123456789Z ", "trainer-1  | ", "trainer_1  | 2025-03-01T10:00:00+00:00 "):
        log = tmp_path / "collected.log"
        log.write_text(prefix + warn + "\n")
        (line,) = reader.scan([log], engine="python")
        assert line.text == warn and (line.stamp is not None) == ("T10:" in prefix), prefix
        first = json.loads(run.triage([str(log)], fmt="json")[0])["first"]
        assert first["signature"] == json.loads(run.triage([str(bare)], fmt="json")[0])["first"]["signature"], prefix
        assert first["time"] == (
            "03-01 10:00:00.123456" if "123" in prefix else "03-01 10:00:00.000000" if "T" in prefix else None
        )
    table = tmp_path / "table.log"
    table.write_text("loss | 0.5 NCCL WARN x\n")
    assert [ln.text for ln in reader.scan([table], engine="python")] == ["loss | 0.5 NCCL WARN x"]


def test_capped_keys_stop_at_their_cap(tmp_path, monkeypatch):
    log = tmp_path / "big.log"
    log.write_text("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0\n" * 50 + "FATAL boom\n")
    monkeypatch.setattr(reader, "CAPPED", {"via NET/": 7, ("INFO Channel ", "INFO Ring "): 7})
    from ncclgen.triage import grepscan

    for engine in ("python", "grep") if grepscan.available() else ("python",):
        kept = [ln.text for ln in reader.scan([log], engine=engine)]
        assert len(kept) == 8 and kept[-1] == "FATAL boom", engine


def test_a_capped_group_shares_its_count_in_file_order(tmp_path, monkeypatch):
    """A group's keys count together, line by line in file order, with both engines (grep -m's rule)."""
    log = tmp_path / "g.log"
    rows = [f"h:1:1 [0] NCCL INFO {'Ring' if i % 2 else 'Channel'} {i:02d} : 0 1" for i in range(40)]
    log.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(reader, "CAPPED", {("INFO Channel ", "INFO Ring "): 5})
    from ncclgen.triage import grepscan

    for engine in ("python", "grep") if grepscan.available() else ("python",):
        assert [ln.text for ln in reader.scan([log], engine=engine)] == rows[:5], engine


def test_progress_bar_only_on_a_terminal_and_over_100_mb():
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    big, small, pipe = Tty(), Tty(), io.StringIO()
    for stream, total in ((big, 200 << 20), (small, 50 << 20), (pipe, 200 << 20)):
        bar = reader.Progress(total, stream)
        bar(total // 2)
        bar(total - total // 2)
        bar.close()
    assert "50%" in big.getvalue() and "100%" in big.getvalue()
    assert small.getvalue() == "" and pipe.getvalue() == ""


def test_a_hostile_json_file_line_is_not_parsed_past_its_log_string(tmp_path):
    """Arrays nested a hundred thousand deep after the "log" string would exhaust json's recursion: only the string is
    decoded, and an unterminated one leaves the line as it is."""
    from ncclgen.triage import run

    deep = tmp_path / "deep-json.log"
    deep.write_text('{"log":"gpu1:10:11 [0] NCCL WARN x\\n","a":' + "[" * 100000 + "]" * 100000 + "}\n")
    (line,) = reader.scan([deep], engine="python")
    assert line.text == "gpu1:10:11 [0] NCCL WARN x"
    run.triage([str(deep)], fmt="json")  # no RecursionError
    open_string = tmp_path / "open-json.log"
    open_string.write_text('{"log":"NCCL WARN ' + "\\\\" * 50000 + "\n")
    (line,) = reader.scan([open_string], engine="python")
    assert line.text.startswith('{"log":"NCCL WARN')
