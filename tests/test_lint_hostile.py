"""Lint on hostile input (issue 33): a name with a confusable character is not read by NCCL and the
report names the character; a BOM does not hide the first line; control characters from the input
never reach the terminal raw; a long value is echoed once, cut short."""

from __future__ import annotations

import json

import pytest

from ncclgen.cli import main


def lint(capsys, tmp_path, raw: bytes, *extra: str) -> tuple[int, str]:
    path = tmp_path / "in.env"
    path.write_bytes(raw)
    rc = main(["lint", *extra, str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out


@pytest.mark.parametrize(
    "line, named, meant",
    [
        ("export NCCL_IB_H\u0421A=mlx5_0\n", "U+0421 CYRILLIC CAPITAL LETTER ES", "NCCL_IB_HCA"),
        ("export NCCL_\u200bDEBUG=INFO\n", "U+200B ZERO WIDTH SPACE", "NCCL_DEBUG"),
        ("NCCL_\uff24EBUG=INFO python x.py\n", "U+FF24 FULLWIDTH LATIN CAPITAL LETTER D", "NCCL_DEBUG"),
        ("\u200bNCCL_DEBUG=INFO\n", "U+200B ZERO WIDTH SPACE", "NCCL_DEBUG"),
    ],
)
def test_a_confusable_name_is_an_error_naming_the_character(capsys, tmp_path, line, named, meant):
    rc, out = lint(capsys, tmp_path, line.encode())
    assert rc == 1, out
    assert "error NG001" in out and named in out and "not a name NCCL or PyTorch reads" in out
    assert f"{meant} stays unset" in out and f"retype the name as {meant}" in out
    assert "\u200b" not in out  # the invisible character is shown escaped


def test_a_confusable_name_in_a_manifest(capsys, tmp_path):
    doc = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n"
        '    env:\n    - {name: "NCCL_IB_H\u0421A", value: mlx5_0}\n'
    )
    rc, out = lint(capsys, tmp_path, doc.encode())
    assert rc == 1 and "U+0421 CYRILLIC CAPITAL LETTER ES" in out and "in.env:9:" in out


def test_a_bom_does_not_hide_the_first_line(capsys, tmp_path):
    rc, out = lint(capsys, tmp_path, b"\xef\xbb\xbfexport NCCL_DEBUGG=INFO\n")
    assert rc == 1 and "in.env:1: error NG001 NCCL_DEBUGG" in out
    assert "1 variable(s) checked" in out


def test_control_characters_from_the_input_are_escaped(capsys, tmp_path):
    rc, out = lint(capsys, tmp_path, b"export NCCL_DEBUG='INFO\x1b[31mX\rY'\n")
    assert rc == 1
    assert "\x1b" not in out and "\r" not in out
    assert "\\x1b[31mX\\rY" in out


def test_a_200_kb_value_is_echoed_once_and_short(capsys, tmp_path):
    value = "A" * 200_000
    rc, out = lint(capsys, tmp_path, f"export NCCL_DEBUG={value}\n".encode())
    assert rc == 1 and "NG006" in out
    assert len(out) < 2_000, len(out)
    assert "more characters" in out
    rc = main(["lint", "--format", "json", str(tmp_path / "in.env")])
    report = json.loads(capsys.readouterr()[0])
    assert all(len(f["message"]) < 1_000 for f in report["findings"])


def test_plain_names_are_unchanged(capsys, tmp_path):
    rc, out = lint(capsys, tmp_path, b"export MY_APP=1\nexport NCCL_DEBUG=INFO\n")
    assert rc == 0 and "0 error(s)" in out
