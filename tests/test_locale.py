"""The locale never changes the outcome (issue 33): under LANG=C, LC_ALL=POSIX and PYTHONUTF8=0 a UTF-8
`-- ARG` or --set-unchecked value renders exactly as under C.UTF-8 (no traceback, no "not UTF-8 text"),
and bytes that are not UTF-8 are refused the same way in every locale."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LOCALES = {
    "utf8": {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    "C": {"LANG": "C", "PYTHONUTF8": "0"},
    "POSIX": {"LANG": "C", "LC_ALL": "POSIX", "PYTHONUTF8": "0"},
    "ascii-io": {"LANG": "C", "LC_ALL": "POSIX", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"},
}


def ncclgen(locale: str, *args: str | bytes) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    env.update(LOCALES[locale])
    argv = [os.fsencode(a) if isinstance(a, str) else a for a in (sys.executable, "-m", "ncclgen", *args)]
    return subprocess.run(argv, capture_output=True, env=env, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ("slurm", "--", "trainer.experiment_name=\u00e9t\u00e9"),
        ("env", "--set-unchecked", "MY_LABEL=caf\u00e9 \u0421"),
    ],
)
def test_utf8_arguments_render_the_same_in_every_locale(args):
    outputs = {}
    for locale in LOCALES:
        proc = ncclgen(locale, *args)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 0, (locale, proc.stderr)
        outputs[locale] = proc.stdout
    assert outputs["C"] == outputs["utf8"] == outputs["POSIX"] == outputs["ascii-io"]
    assert args[-1].encode("utf-8") in outputs["utf8"] or b"caf\xc3\xa9" in outputs["utf8"]


def test_bytes_that_are_not_utf8_are_refused_alike():
    errors = set()
    for locale in LOCALES:
        proc = ncclgen(locale, "env", "--set-unchecked", b"MY_V=\xff")
        assert proc.returncode == 2 and proc.stdout == b"" and b"Traceback" not in proc.stderr
        errors.add(proc.stderr)
    assert len(errors) == 1 and b"is not UTF-8 text" in errors.pop()


def test_a_non_ascii_output_path_is_written_in_every_locale(tmp_path):
    for locale in LOCALES:
        target = tmp_path / f"job-{locale}-\u00e9.sh"
        proc = ncclgen(locale, "slurm", "-o", str(target))
        assert proc.returncode == 0, proc.stderr
        assert target.exists()
