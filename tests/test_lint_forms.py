"""Every way a shell text sets a variable reaches the linter (issue 20 item 1), and every form it cannot
evaluate is named per line as "not checked", never a silent clean.

Each case is a script and its exact verdict: the (line, variable, code) of every finding, and the lines
reported "not checked". NCCL_MAX_RINGS=8 is the probe (NG002: no NCCL release reads it).
"""

from __future__ import annotations

import pytest

from ncclgen import lint
from ncclgen.cli import main

BAD = "NCCL_MAX_RINGS=8"
HIT = [(1, "NCCL_MAX_RINGS", "NG002")]

FORMS = {
    "export": (f"export {BAD}\n", HIT, []),
    "plain": (f"{BAD}\n", HIT, []),
    "after-semicolon": (f"export A=1; export {BAD}\n", HIT, []),
    "several-per-export": (f"export A=1 {BAD} B=2\n", HIT, []),
    "declare-x": (f"declare -x {BAD}\n", HIT, []),
    "declare-gx": (f"declare -gx {BAD}\n", HIT, []),
    "typeset-x": (f"typeset -x {BAD}\n", HIT, []),
    "local-in-function": (f"f() {{ local -x {BAD}; run; }}\n", HIT, []),
    "readonly": (f"readonly {BAD}\n", HIT, []),
    "env-cmd": (f"env {BAD} python x.py\n", HIT, []),
    "env-i-u": (f"env -i -u HOME {BAD} python x.py\n", HIT, []),
    "prefix": (f"{BAD} python x.py\n", HIT, []),
    "two-prefixes": (f"A=1 {BAD} python x.py\n", HIT, []),
    "srun-export-all": (f"srun --export=ALL,{BAD} python x.py\n", HIT, []),
    "srun-export-space": (f"srun -N 2 --export {BAD} python x.py\n", HIT, []),
    "sbatch-export": (f"sbatch --export=NONE,A=1,{BAD} job.sh\n", HIT, []),
    "sbatch-line": (f"#!/bin/bash\n#SBATCH --export=ALL,{BAD}\n", [(2, "NCCL_MAX_RINGS", "NG002")], []),
    "salloc-export": (f"salloc --export={BAD}\n", HIT, []),
    "if-then": (f"if true; then export {BAD}; fi\n", HIT, []),
    "if-multiline": (f'if [ -n "$X" ]; then\n  export {BAD}\nfi\n', [(2, "NCCL_MAX_RINGS", "NG002")], []),
    "else": (f"if x; then :; else export {BAD}; fi\n", HIT, []),
    "for": (f"for i in 1 2; do export {BAD}; done\n", HIT, []),
    "while": (f"while read -r l; do export {BAD}; done < f\n", HIT, []),
    "case": (f"case $X in\n  a) export {BAD} ;;\nesac\n", [(2, "NCCL_MAX_RINGS", "NG002")], []),
    "function": (f"f() {{ export {BAD}; }}\n", HIT, []),
    "function-keyword": (f"function f {{\n  export {BAD}\n}}\n", [(2, "NCCL_MAX_RINGS", "NG002")], []),
    "subshell": (f"( export {BAD}; run )\n", HIT, []),
    "group": (f"{{ export {BAD}; }}\n", HIT, []),
    "and-chain": (f"[ -f x ] && export {BAD}\n", HIT, []),
    "or-chain": (f"false || export {BAD}\n", HIT, []),
    "pipe": (f"echo x | {BAD} python x.py\n", HIT, []),
    "background": (f"run & export {BAD}\n", HIT, []),
    "negation": (f"! export {BAD}\n", HIT, []),
    "set-a": (f"set -a\n{BAD}\nset +a\n", [(2, "NCCL_MAX_RINGS", "NG002")], []),
    "exec-env": (f"exec env {BAD} python x.py\n", HIT, []),
    "nohup-srun": (f"nohup srun --export=ALL,{BAD} x &\n", HIT, []),
    "bash-c": (f"bash -c 'export {BAD}; run'\n", HIT, []),
    "quoted-value": ('export NCCL_MAX_RINGS="8"\n', HIT, []),
    "continuation": (f"export A=1 \\\n  {BAD}\n", HIT, []),
    # removal: the environment no longer carries it
    "export-n": (f"export {BAD}\nexport -n NCCL_MAX_RINGS\n", [], []),
    "unset": (f"export {BAD}\nunset NCCL_MAX_RINGS\n", [], []),
    "declare-plus-x": (f"export {BAD}\ndeclare +x NCCL_MAX_RINGS\n", [], []),
    # forms that are not assignments
    "echo": (f"echo export {BAD}\n", [], []),
    "heredoc-body": (f"cat > f <<EOF\nexport {BAD}\nEOF\n", [], []),
    "comment": (f"# export {BAD}\n", [], []),
    "array": ("declare -a NCCL_MAX_RINGS=(8)\n", [], []),
    # forms that cannot be evaluated: named per line
    "value-from-substitution": ("export NCCL_SOCKET_IFNAME=$(ip -o route get 1 | cut -d' ' -f5)\n", [], [1]),
    "value-from-backquote": ("export NCCL_IB_HCA=`cat hca`\n", [], [1]),
    "value-from-variable": ("export NCCL_IB_HCA=$HCAS\n", [], [1]),
    "expanded-name": ('export "${P}_X"=1\n', [], [1]),
    "eval": (f"eval 'export {BAD}'\n", [], [1]),
    "source": ("source ./site.env\n", [], [1]),
    "dot": (". /etc/nccl.env\n", [], [1]),
    "export-file": ("srun --export-file=vars.env x\n", [], [1]),
    "append": ("export NCCL_IB_HCA+=,mlx5_1\n", [], [1]),
    "env-split-string": ("env -S 'A=1 B=2' x\n", [], [1]),
    "srun-export-substitution": ('srun --export=ALL,NCCL_IB_HCA="$(cat h)" x\n', [], [1]),
    # an expansion in a name ncclgen does not check is not a note
    "irrelevant-substitution": ("export MASTER_ADDR=$(hostname)\n", [], []),
}


def run(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("case", sorted(FORMS))
def test_every_form_is_read(case):
    text, findings, unchecked = FORMS[case]
    got = [(f.line, f.variable, f.code) for f in lint.lint_text(text, "in.sh")]
    assert got == findings
    assert [line for line, _ in lint.unchecked(text, "in.sh")] == unchecked


def test_not_checked_is_named_and_counted_and_not_clean(tmp_path, capsys):
    """Only a sourced file: 0 variables checked must not read as clean (exit 3, documented in --help)."""
    path = tmp_path / "job.sh"
    path.write_text("source ./site.env\nexport NCCL_IB_HCA=$(cat hcas)\n")
    assert run(["lint", str(path)]) == 3
    out = capsys.readouterr().out
    assert f"{path}:1: not checked: 'source ./site.env': a sourced file is not read" in out
    assert f"{path}:2: not checked: NCCL_IB_HCA's value" in out
    assert out.rstrip().endswith("0 error(s), 0 warning(s), 0 info, 2 not checked")


def test_error_wins_over_not_checked(tmp_path, capsys):
    path = tmp_path / "job.sh"
    path.write_text(f"source ./site.env\nexport {BAD}\n")
    assert run(["lint", str(path)]) == 1
    assert "1 not checked" in capsys.readouterr().out


def test_json_lists_not_checked(tmp_path, capsys):
    import json

    path = tmp_path / "job.sh"
    path.write_text("eval x\n")
    assert run(["lint", "--format", "json", str(path)]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["not_checked"] == [{"file": str(path), "line": 1, "what": "eval: the text it runs is built at run time"}]


POD = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: c
      image: x
"""
CM = """---
apiVersion: v1
kind: ConfigMap
metadata: {name: nccl}
data:
  NCCL_MAX_RINGS: "8"
  NCCL_DEBUG: WARN
"""

MANIFESTS = {
    "env-value": (
        POD + "      env:\n        - {name: NCCL_MAX_RINGS, value: '8'}\n",
        [(9, "NCCL_MAX_RINGS", "NG002")],
        [],
    ),
    "envfrom-configmap": (
        POD + "      envFrom:\n        - configMapRef: {name: nccl}\n" + CM,
        [(15, "NCCL_MAX_RINGS", "NG002")],
        [],
    ),
    "envfrom-prefix": (
        POD + "      envFrom:\n        - prefix: NCCL_\n          configMapRef: {name: p}\n"
        "---\nkind: ConfigMap\nmetadata: {name: p}\ndata: {MAX_RINGS: '8'}\n",
        [(14, "NCCL_MAX_RINGS", "NG002")],
        [],
    ),
    "configmapkeyref": (
        POD + "      env:\n        - name: NCCL_MAX_RINGS\n          valueFrom:\n"
        "            configMapKeyRef: {name: nccl, key: NCCL_MAX_RINGS}\n" + CM,
        [(9, "NCCL_MAX_RINGS", "NG002")],
        [],
    ),
    "list-of-items": (
        "apiVersion: v1\nkind: List\nitems:\n"
        "  - {kind: ConfigMap, metadata: {name: nccl}, data: {NCCL_MAX_RINGS: '8'}}\n"
        "  - kind: Pod\n    spec:\n      containers:\n        - envFrom: [{configMapRef: {name: nccl}}]\n",
        [(4, "NCCL_MAX_RINGS", "NG002")],
        [],
    ),
    "env-wins-over-envfrom": (
        POD + "      envFrom:\n        - configMapRef: {name: nccl}\n"
        "      env:\n        - {name: NCCL_MAX_RINGS, value: '8'}\n" + CM,
        [(11, "NCCL_MAX_RINGS", "NG002"), (11, "NCCL_MAX_RINGS", "NG016"), (17, "NCCL_MAX_RINGS", "NG002")],
        [],
    ),
    "configmap-not-in-input": (POD + "      envFrom:\n        - configMapRef: {name: elsewhere}\n", [], [9]),
    "secret-ref": (POD + "      envFrom:\n        - secretRef: {name: s}\n", [], [9]),
    "secret-key-ref": (
        POD + "      env:\n        - name: NCCL_IB_HCA\n          valueFrom: {secretKeyRef: {name: s, key: k}}\n",
        [],
        [9],
    ),
    "keyref-missing": (
        POD + "      env:\n        - name: NCCL_IB_HCA\n          valueFrom: {configMapKeyRef: {name: none, key: k}}\n",
        [],
        [9],
    ),
    "field-ref-irrelevant": (
        POD + "      env:\n        - name: POD_IP\n          valueFrom: {fieldRef: {fieldPath: status.podIP}}\n",
        [],
        [],
    ),
}


@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_every_manifest_form_is_read(case):
    text, findings, unchecked = MANIFESTS[case]
    got = sorted((f.line, f.variable, f.code) for f in lint.lint_text(text, "job.yaml"))
    assert got == sorted(findings)
    assert [line for line, _ in lint.unchecked(text, "job.yaml")] == unchecked
