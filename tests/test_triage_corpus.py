"""`ncclgen triage` on the corpus of real logs (tests/data/triage/*.log) from public threads.

Each file names its source thread, the cause the thread established (`# cause: CLASS: ...`, the class of
classes.yaml or signatures.yaml that names it, `clean` for a run without failure, `hang` for one with no
error line, `program` for the program's own exception (program.py), `unclassified` where the log itself does not
show the cause) and the root line (`# root: N`, 0 for none). Triage must name that
class at that line, and report no failure on a clean run. The rules are per class, derived from the
sources (nccl-warn.tsv, classes.yaml), not per file.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest

from ncclgen.triage import analyse, catalogue, lastline, lookups, run, slow

DATA = Path(__file__).parent / "data" / "triage"
FILES = sorted(DATA.glob("*.log"))
HEADER = re.compile(r"# source: (?P<url>https://\S+).*\n# cause: (?P<cls>[\w-]+): .+\n# root: (?P<root>\d+)\n")


def expected(f: Path) -> tuple[str, str, int]:
    m = HEADER.match(f.read_text())
    assert m, f"{f.name}: header '# source: URL' / '# cause: CLASS: text' / '# root: N' missing"
    return m.group("url"), m.group("cls"), int(m.group("root"))


def test_corpus_size_and_spread():
    assert len(FILES) >= 40
    classes = collections.Counter(expected(f)[1] for f in FILES)
    assert classes["clean"] >= 4
    assert sum(1 for c, n in classes.items() if n >= 2 and c not in ("clean", "unclassified", "program")) >= 6


@pytest.mark.parametrize("f", FILES, ids=[f.name for f in FILES])
def test_cause_and_root_line(f):
    _url, cls, root = expected(f)
    text, code = run.triage([str(f)], fmt="json")
    data = json.loads(text)
    if cls == "clean":
        # an excerpt that stops in NCCL init (no Init COMPLETE in it), or that left some ranks' lines out, reads as
        # ending early (unfinished, exit 0), not as a failure
        text = f.read_text()
        early = data["status"] == "unfinished" and ("Init COMPLETE" not in text or data["hang"]["init_incomplete"])
        # an excerpt whose last line is a wait (c10d retrying its store's host): unfinished at that line, which
        # the report says may be where the excerpt was cut (lastline.py)
        waits = (*lastline.WAITS.values(), *lastline.STALLS)
        cut = data["status"] == "unfinished" and data.get("first", {}).get("signature") in waits
        assert (data["status"] == "clean" or early or cut) and code == 0 and ("first" not in data or cut), data.get(
            "first"
        )
        return
    if cls == "hang":  # no error line: what the logs show last (ranks without Init COMPLETE)
        # a log that ends in NCCL init, with no rank complete, cannot tell a hang from an excerpt cut short
        want = ("hang", 1) if data["hang"] and data["hang"]["certain"] else ("unfinished", 0)
        assert (data["status"], code) == want and data["hang"], data.get("first")
        return
    if cls in ("unclassified", "program"):
        assert data["status"] == cls and code == 1
    else:
        # a difference between nodes in a log with no error line is named as such (status mismatch)
        # a slow-path class that explains the failures it lists (mixed link layers: a QP that cannot come up)
        explains = cls in catalogue.classes() and catalogue.classes()[cls].explains
        want = (
            ("slow", "cause")
            if cls in slow.FINDINGS and explains
            else ("slow",)
            if cls in (*slow.FINDINGS, *slow.LINES, lookups.SLOWED)
            else ("unfinished",)
            if cls in (*lastline.WAITS.values(), *(lastline.STALLS - lastline.ACROSS_HOSTS))
            # a link-local interface: the cause of the failure that follows it, or where a log that ends early stalled
            else ("cause", "unfinished")
            if cls in lastline.ACROSS_HOSTS
            else ("cause", "mismatch")
            if cls.startswith("nodes-differ-") or cls in (*analyse.MISMATCH, "bootstrap-unroutable")
            else ("cause",)
        )
        assert data["status"] in want and code == 0, data.get("first")
        assert data["first"]["signature"] == cls
    assert data["first"]["where"] == f"{f}:{root}"
