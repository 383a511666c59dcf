"""Second hostile pass (issue 25): each attack that let another user's input run code on the submit
host or in the job, change the job's structure or change a value silently, with the behaviour ncclgen
must keep. One policy per class, whatever the source (CLI, descriptor, workload, ncclgen.yaml):

1 code on the submit host: no jinja bytecode cache is read or written;
2 code in the job: sbatch options that set the start-up environment, implicit folders another user can
  write (./workloads, ./clusters, ./ncclgen.yaml), NCCL_CONF_FILE without opt-in, Secret-backed names;
3 structure: mounts over /etc/ncclgen, dotenv lines, Multus network names;
4 values: -- ARGS hold no character a reader turns into a line break;
5 every output format writes one line per variable.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_hostile import LOCAL_CI, POLICY, WORKLOAD, descriptor, one_line_error, run, workload

from ncclgen.load import envnames, podspec, sbatch

OTHER_UID = 4242
K8S = "kubernetes:\n  image: img:1\n"
HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- 1. no bytecode cache -----------------------------------------------------------------------------------


def test_render_reads_and_writes_no_template_cache(tmp_path, capsys, monkeypatch):
    """No cache a user could plant code in: the only precompiled templates are the package's own."""
    from ncclgen.render import templates

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    templates.environment.cache_clear()
    rc, out, _err = run(capsys, "slurm", "--cluster", "local-ci", "--workload", "bench")
    assert rc == 0 and out.startswith("#!")
    env = templates.environment()
    assert env.bytecode_cache is None
    assert list(env.loader.module.__path__) == [templates.COMPILED]
    assert Path(templates.COMPILED).parent == Path(templates.__file__).parent
    assert not (tmp_path / "cache").exists()


# -- 2a. sbatch options that set the job's environment ------------------------------------------------------

EXPORTS = [
    ("export", "ALL,BASH_ENV=/tmp/x"),
    ("export", "NONE"),
    ("export-file", "/tmp/env"),
    ("get-user-env", None),
]


@pytest.mark.parametrize("key,value", EXPORTS)
def test_sbatch_options_that_set_the_environment_are_refused_from_the_cli(tmp_path, capsys, key, value):
    item = key if value is None else f"{key}={value}"
    out_file = tmp_path / "job.sbatch"
    rc, _out, err = run(capsys, "slurm", "--cluster", "local-ci", "--sbatch", item, "-o", str(out_file))
    assert "environment" in one_line_error(rc, err) and not out_file.exists()


@pytest.mark.parametrize("key,value", EXPORTS)
def test_sbatch_options_that_set_the_environment_are_refused_from_a_descriptor(tmp_path, capsys, key, value):
    yaml_value = "true" if value is None else json.dumps(value)
    path = descriptor(tmp_path, replace=("slurm:\n", f"slurm:\n  extra_sbatch:\n    {key}: {yaml_value}\n"))
    rc, _out, err = run(capsys, "slurm", "--cluster", path, "--workload", "bench")
    assert "environment" in one_line_error(rc, err)


@given(st.sampled_from(["export", "export-file", "get-user-env"]), st.text(string.printable.strip(), max_size=30))
@HYP
def test_no_spelling_of_an_environment_option_passes_the_check(key, value):
    for k in (key, "--" + key):
        for v in (value, True, None):
            with pytest.raises(sbatch.SbatchOptionError, match="environment"):
                sbatch.check(k, v)


# -- 2b. implicit folders another user could write ----------------------------------------------------------


def _plant(folder, name: str, text: str, *, uid: int | None = None, mode: int | None = None) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    if mode is not None:
        (folder / name).chmod(mode)
    if uid is not None:
        os.chown(folder, uid, -1)


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
@pytest.mark.parametrize("how", ["other-owner", "world-writable-folder"])
def test_a_workload_planted_in_the_current_folder_is_refused(tmp_path, monkeypatch, how):
    """Refused with one error (ncclgen/trust.py), never skipped for the bundled file of the same name."""
    from ncclgen.errors import UserError

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_WORKLOADS", raising=False)
    monkeypatch.delenv("NCCLGEN_SAFE_DIRECTORIES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    from ncclgen.load import workload as wl

    text = Path(wl.bundled()[wl.DEFAULT]).read_text() + "\n# planted\n"
    folder = tmp_path / "workloads"
    if how == "other-owner":
        _plant(folder, f"{wl.DEFAULT}.yaml", text, uid=OTHER_UID)
    else:
        _plant(folder, f"{wl.DEFAULT}.yaml", text)
        folder.chmod(0o777)
    with pytest.raises(UserError, match=r"not reading it: .*another user could have planted it"):
        wl.resolve(wl.DEFAULT)


def test_a_group_writable_workload_of_your_own_is_read(tmp_path, monkeypatch):
    """umask 002 (a team folder) makes 664 files and 775 folders: still yours, so read (git's rule)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_WORKLOADS", raising=False)
    from ncclgen.load import workload as wl

    _plant(tmp_path / "workloads", "mine.yaml", WORKLOAD, mode=0o664)
    (tmp_path / "workloads").chmod(0o775)
    assert wl.resolve("mine") == str(tmp_path / "workloads" / "mine.yaml")


def test_a_workload_in_an_owner_only_current_folder_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLGEN_WORKLOADS", raising=False)
    from ncclgen.load import workload as wl

    tmp_path.chmod(0o755)
    _plant(tmp_path / "workloads", "mine.yaml", WORKLOAD, mode=0o644)
    (tmp_path / "workloads").chmod(0o755)
    assert wl.resolve("mine") == str(tmp_path / "workloads" / "mine.yaml")


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_a_descriptor_and_project_file_planted_by_another_user_are_refused(tmp_path, monkeypatch):
    from ncclgen.errors import UserError

    monkeypatch.chdir(tmp_path)
    for name in ("NCCLGEN_CLUSTERS", "NCCLGEN_CLUSTER", "NCCLGEN_SAFE_DIRECTORIES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    from ncclgen.load import defaults
    from ncclgen.load import descriptor as desc

    _plant(tmp_path / "clusters", "h100-ib.yaml", LOCAL_CI, uid=OTHER_UID)
    with pytest.raises(UserError, match="owned by uid 4242"):
        desc.resolve("h100-ib")
    (tmp_path / "ncclgen.yaml").write_text("cluster: ./evil.yaml\n")
    os.chown(tmp_path / "ncclgen.yaml", OTHER_UID, -1)
    with pytest.raises(UserError, match=r"ncclgen\.yaml: not reading it"):
        defaults.default("cluster")


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_an_explicitly_named_folder_is_the_opt_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from ncclgen.load import workload as wl

    _plant(tmp_path / "team", "theirs.yaml", WORKLOAD, uid=OTHER_UID)
    monkeypatch.setenv("NCCLGEN_WORKLOADS", str(tmp_path / "team"))
    assert wl.resolve("theirs") == str(tmp_path / "team" / "theirs.yaml")


@given(st.integers(0, 0o777))
@HYP
def test_trust_rule_matches_the_mode_bits(tmp_path_factory, mode):
    from ncclgen import trust

    d = tmp_path_factory.mktemp("t")
    d.chmod(0o755)
    f = d / "x.yaml"
    f.write_text("")
    f.chmod(mode)
    assert (trust.why_untrusted(str(f), str(d)) is None) == (not mode & 0o002)
    d.chmod(0o777)
    assert trust.why_untrusted(str(f), str(d)) is not None
    d.chmod(0o1777)
    assert (trust.why_untrusted(str(f), str(d)) is None) == (not mode & 0o002)


# -- 2c. names that load code: one policy for every source --------------------------------------------------


def test_nccl_conf_file_needs_the_opt_in_in_a_descriptor(tmp_path, capsys):
    entry = "env:\n  - name: NCCL_CONF_FILE\n    value: /tmp/evil.conf\n    reason: test\n"
    rc, _out, err = run(capsys, "env", "--cluster", descriptor(tmp_path, entry), "--workload", "bench")
    assert "NCCL_CONF_FILE" in one_line_error(rc, err) and "unchecked" in err
    ok = entry + "    unchecked: true\n"
    rc, out, err = run(capsys, "env", "--cluster", descriptor(tmp_path, ok), "--workload", "bench")
    assert rc == 0 and "NCCL_CONF_FILE=/tmp/evil.conf" in out, err


def test_nccl_conf_file_needs_the_opt_in_in_a_workload(tmp_path, capsys):
    entry = "env:\n  - name: NCCL_CONF_FILE\n    value: /tmp/evil.conf\n    reason: test\n"
    path = workload(tmp_path, entry) if "\nenv:" not in WORKLOAD else None
    if path is None:
        pytest.skip("bench workload already has an env list")
    rc, _out, err = run(capsys, "env", "--cluster", "local-ci", "--workload", path)
    assert "NCCL_CONF_FILE" in one_line_error(rc, err)


SECRET_REFUSED = [e["name"] for e in POLICY["refuse"]] + [e["name"] for e in POLICY["paths"]] + ["LD_PRELOAD"]


@pytest.mark.parametrize("name", SECRET_REFUSED)
def test_secret_env_names_follow_the_env_policy_from_both_sources(tmp_path, capsys, name):
    rc, _out, err = run(capsys, "k8s", "--cluster", "local-ci", "--workload", "bench", "--secret-env", f"{name}=s:k")
    assert name in one_line_error(rc, err)
    path = descriptor(tmp_path, K8S + f"  secret_env: [{name}=s:k]\n")
    rc, _out, err = run(capsys, "k8s", "--cluster", path, "--workload", "bench")
    assert name in one_line_error(rc, err) and "secret_env" in err


@given(st.from_regex(r"[A-Z_][A-Z0-9_]{0,20}", fullmatch=True))
@HYP
def test_secret_env_refuses_exactly_what_the_env_policy_refuses(name):
    bad = envnames.refused(name) is not None or name in envnames.policy().paths
    try:
        podspec.parse_secret_env(f"{name}=s:k")
        refused = False
    except podspec.Invalid:
        refused = True
    assert refused == bad


# -- 3. structure ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mount", ["/etc/ncclgen", "/etc/ncclgen/x", "/etc", "/", "/dev/shm", "/etc/ncclgen/"])
def test_a_descriptor_volume_may_not_mount_over_ncclgens_own(tmp_path, capsys, mount):
    vol = f"  volumes:\n    - {{name: v, config_map: cm, mount_path: {mount!r}}}\n"
    rc, _out, err = run(capsys, "k8s", "--cluster", descriptor(tmp_path, K8S + vol), "--workload", "bench")
    assert "volumes" in one_line_error(rc, err)
    rc, _out, err = run(
        capsys, "k8s", "--cluster", "local-ci", "--workload", "bench", "--volume", f"configmap:cm:{mount}"
    )
    one_line_error(rc, err)


@pytest.mark.parametrize("network", ["a,b", "a@eth9", "a b", "A", "ns/a/b", "a,ns/b@eth1", "a\u0085b"])
def test_a_network_name_is_one_multus_attachment(tmp_path, capsys, network):
    nets = f"  networks:\n    - {{interface: eth1, network: {json.dumps(network)}}}\n"
    rc, _out, err = run(capsys, "k8s", "--cluster", descriptor(tmp_path, K8S + nets), "--workload", "bench")
    assert "network" in one_line_error(rc, err)


def test_a_namespaced_network_is_accepted(tmp_path, capsys):
    nets = "  networks:\n    - {interface: eth1, network: team-a/rdma1}\n"
    rc, out, err = run(capsys, "k8s", "--cluster", descriptor(tmp_path, K8S + nets), "--workload", "bench")
    assert rc == 0, err
    assert "team-a/rdma1@eth1" in out


VALUES = ["a\nb", "a\rb", "x\nNCCL_NET_PLUGIN=evil", "a\x0bb", "a\x0cb", "a\x1cb"]


@pytest.mark.parametrize("value", VALUES)
def test_dotenv_refuses_a_value_over_two_lines(tmp_path, capsys, value):
    entry = f"env:\n  - name: NCCL_DEBUG_FILE\n    value: {json.dumps(value)}\n    reason: test\n"
    path = descriptor(tmp_path, entry)
    rc, out, err = run(capsys, "env", "--cluster", path, "--workload", "bench", "--format", "dotenv")
    if rc == 2 and "dotenv" not in err:
        pytest.skip("refused earlier by the value policy")
    assert "dotenv" in one_line_error(rc, err) and out == ""


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20))
@HYP
def test_shell_format_writes_one_line_per_variable(value):
    from ncclgen.cli.plan import _LINE_BREAK
    from ncclgen.render import shell

    quoted = shell.comment_quote(value)
    assert not _LINE_BREAK.search(quoted.replace("\x85", "").replace("\u2028", "").replace("\u2029", ""))


# -- 4. values: -- ARGS get the value policy ------------------------------------------------------------------

BREAKS = ["\u0085", "\u2028", "\u2029", "\x00", "\x1b", "\x7f", "\x9b"]


@pytest.mark.parametrize("char", BREAKS)
@pytest.mark.parametrize("command", ["slurm", "k8s", "explain"])
def test_extra_args_with_a_line_break_character_are_refused(tmp_path, capsys, char, command):
    out_file = tmp_path / "out"
    argv = [command, "--cluster", "local-ci", "--workload", "bench", "-o", str(out_file), "--", f"a{char}b"]
    if command == "explain":
        argv.remove("-o")
        argv.remove(str(out_file))
    rc, _out, err = run(capsys, *argv)
    assert "-- argument" in one_line_error(rc, err) and not out_file.exists()


@given(st.lists(st.text(max_size=8), max_size=4))
@HYP
def test_extra_args_policy_is_the_value_policy(args):
    from ncclgen.errors import UserError, unsafe_char
    from ncclgen.plan.build import _check_extra_args

    bad = any(unsafe_char(a) for a in args)
    try:
        _check_extra_args(tuple(args))
        assert not bad
    except UserError:
        assert bad


# -- 5. every output format: one line per variable, quoted as data -------------------------------------------


@pytest.mark.parametrize("value", ["a\nb", "a\tb\nexport X=1", "x'\n$(id)"])
def test_every_format_writes_a_control_character_value_on_its_own_line(tmp_path, capsys, value):
    import subprocess

    entry = f"env:\n  - name: NCCL_DEBUG_FILE\n    value: {json.dumps(value)}\n    reason: test\n"
    path = descriptor(tmp_path, entry)
    for argv in (["env"], ["explain"], ["slurm"]):
        rc, out, err = run(capsys, *argv, "--cluster", path, "--workload", "bench")
        assert rc == 0, err
        # The lines with the value (not the sbatch script's list of names its environment scrub keeps).
        lines = [
            line
            for line in out.splitlines()
            if "NCCL_DEBUG_FILE" in line and not line.replace("_", "").replace(" ", "").isalnum()
        ]
        assert lines and all("$'" in line for line in lines), lines
    rc, out, err = run(capsys, "env", "--cluster", path, "--workload", "bench")
    script = out + 'printf %s "$NCCL_DEBUG_FILE"\n'
    got = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    assert got == value  # the shell reads back exactly the value


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))
@example("a\x85b")
@example("x\u2028y\nz")
@example("\u2029")
@HYP
def test_manifest_yaml_reads_back_every_string_as_written(value):
    """The root of 'a\\u0085b' arriving as 'a b' / 'a\\nb': PyYAML's allow_unicode emitter wrote NEL raw."""
    import yaml

    from ncclgen.render import k8s as render_k8s

    text = yaml.dump({"v": value, "l": [value]}, Dumper=render_k8s._Dumper, allow_unicode=True)
    assert yaml.safe_load(text) == {"v": value, "l": [value]}


@pytest.mark.parametrize("name", ["BASH_ENV", "LD_PRELOAD", "NCCL_NET_PLUGIN", "PYTHONSTARTUP", "BASH_FUNC_x"])
def test_pass_env_names_follow_the_env_policy(tmp_path, capsys, name):
    out_file = tmp_path / "job.sbatch"
    argv = ["slurm", "--cluster", "local-ci", "--workload", "bench", "--pass-env", name, "-o", str(out_file)]
    rc, _out, err = run(capsys, *argv)
    assert name in one_line_error(rc, err) and not out_file.exists()
