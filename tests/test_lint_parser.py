"""The linter's shell reader (issue 15, class 4): no input skipped silently (its linear time is measured in
benchmarks/big_inputs.py)."""

from __future__ import annotations

import pytest

from ncclgen.cli import main
from ncclgen.errors import UserError
from ncclgen.lint import linter


def names(text: str) -> list[tuple]:
    return linter.parse_text(text, "in.sh")


@pytest.mark.parametrize("prefix", ['"', "'", 'X="$(', "X=`", "X=${"])
def test_an_unclosed_quote_is_found(prefix):
    text = prefix + "\n" + "NCCL_DEBUG=INFO\n" * 16000
    with pytest.raises(UserError) as info:
        names(text)
    assert info.value.line == 1 and "unclosed" in info.value.message


def test_a_large_clean_script_is_read_whole():
    text = ("export NCCL_DEBUG=INFO  # c\nX=\"a b $(echo 'q')\" Y=1\ncat <<EOF\nNCCL_TIMEOUT=1\nEOF\n") * 4000
    found = names(text)
    assert len(found) == 4000 * 3 and {n for n, _, _ in found} == {"NCCL_DEBUG", "X", "Y"}


@pytest.mark.parametrize(
    "line",
    [
        'echo "a << b"',
        "echo 'x <<EOF'",
        "# cat <<EOF",
        "X=$((1 << 3))",
        "((x = 1 << 3))",
        "echo $((x<<2))",
        "cat <<< 'here string'",
        'echo "$(printf "<<EOF")"',
        "Y=`echo '<<EOF'`",
    ],
)
def test_a_shift_or_quoted_heredoc_does_not_hide_later_lines(line):
    found = names(f"{line}\nNCCL_TIMEOUT=1800\n")
    assert ("NCCL_TIMEOUT", "1800", 2) in found


def test_a_real_heredoc_body_is_skipped_and_the_rest_is_read():
    text = "cat <<'EOF' >x\nNCCL_FAKE=1\nEOF\ncat <<-END\n\tNCCL_FAKE=2\n\tEND\nNCCL_DEBUG=INFO\n"
    assert names(text) == [("NCCL_DEBUG", "INFO", 7)]


@pytest.mark.parametrize(
    "text,line",
    [("cat <<EOF\nNCCL_TIMEOUT=1\n", 1), ("X=1\ncat <<-'E'\n", 2), ("echo $((1 +\n", 1), ("A=1\nB=`x\n", 2)],
)
def test_what_cannot_be_read_is_an_error_not_a_skip(tmp_path, capsys, text, line):
    path = tmp_path / "in.sh"
    path.write_text(text)
    assert main(["lint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"in.sh:{line}: " in err


def test_continuations_and_quotes_keep_their_first_line():
    text = 'A=1 \\\n  B=2\nC="multi\nline" D=$(x)\n'
    assert names(text) == [("A", "1", 1), ("B", "2", 1), ("C", "multi\nline", 3), ("D", None, 3)]
