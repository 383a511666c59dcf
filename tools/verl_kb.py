"""Build ncclgen's verl knowledge base from verl's released wheels.

    python tools/verl_kb.py                      download the wheels (pip download --no-deps), write
                                                ncclgen/data/verl/keys.tsv and versions.json
    python tools/verl_kb.py --wheels DIR         use the verl-X-py3-none-any.whl files already in DIR
    python tools/verl_kb.py --check ROOT=VER...  compare the tables with verl trees already installed
                                                (pip install --no-deps --target ROOT verl==VER);
                                                exit 1 naming what differs (tests/test_verl.py)

Needs hydra-core (the loader verl's own ``@hydra.main`` uses) and nothing else of verl's
dependencies: the configs are composed, not run.

What is extracted from each release's ``verl/`` tree:
  - entry modules: every ``verl/trainer/*.py`` with ``@hydra.main(config_path=..., config_name=...)``;
  - every Hydra key with its default (uninterpolated, as the YAML writes it) for each entry config
    and each trainer config <name>.yaml that verl also flattens into ``_generated_<name>.yaml``, composed with Hydra;
  - each config's defaults-list groups and their options (``model_engine=megatron`` style overrides);
  - the keys a release removed compared with the previous one;
  - environment variables an entry module sets at import (verl's SFT trainer: NCCL_DEBUG=WARN).
What is reviewed by hand and cited (CURATED below): keys that still compose but that nothing reads
(dead), what replaces removed keys, the process-group timeout, the container images.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "ncclgen", "data", "verl")
VERSIONS = ("0.8.0", "0.9.0", "0.9.1")  # oldest first; the bundled workloads target the newest
GENERATOR = "python tools/verl_kb.py"

# -- reviewed facts, each with its primary source --------------------------------------------------------

_TORCH_DEFAULT = (
    "PyTorch's default process-group timeout, 1800 s: init_process_group(timeout=None) with "
    "the backend string 'cpu:gloo,cuda:nccl' is not Backend.NCCL, so "
    "_get_default_timeout returns default_pg_timeout (torch 2.13.0 "
    "distributed/distributed_c10d.py _get_default_timeout; c10d/ProcessGroup.hpp "
    "kProcessGroupDefaultTimeout = 30 min)"
)
_ENGINE_TIMEOUT = (
    "verl/workers/engine_workers.py calls initialize_global_process_group_ray(timeout_second=None) "
    "(verl/utils/distributed.py); the legacy fsdp_workers/megatron_workers that read "
    "config.get('nccl_timeout') are gone since 0.8.0 (verl issue #7815, PR #6067)"
)
_SFT_TIMEOUT = (
    "verl/trainer/sft_trainer.py main() calls initialize_global_process_group() whose default "
    "is timeout_second=36000 (verl/utils/distributed.py); no config key changes it"
)

_NCCL_TIMEOUT_DEAD = {"replacement": None, "why": "nothing reads it since verl 0.8.0: " + _ENGINE_TIMEOUT}

CURATED: dict[str, dict] = {
    # Keys that compose but that nothing on the entry's path reads. Checked at render time: an override
    # of one is refused with the reason, so no setting is silently ignored.
    "dead": {
        "0.8.0": {
            "actor_rollout_ref.nccl_timeout": _NCCL_TIMEOUT_DEAD,
            "critic.nccl_timeout": _NCCL_TIMEOUT_DEAD,
        },
        "0.9.0": {
            "actor_rollout_ref.nccl_timeout": _NCCL_TIMEOUT_DEAD,
            "critic.nccl_timeout": _NCCL_TIMEOUT_DEAD,
            "reward_model.reward_manager": {
                "replacement": "reward.reward_manager.name",
                "why": "verl 0.9 main_ppo no longer calls migrate_legacy_reward_impl (0.8.0 main_ppo.py:47 did), "
                "so the legacy key is composed and never read; the reward manager stays 'naive'",
            },
        },
    },
    # What replaces keys and modules that a release removed (the table of removed keys itself is computed).
    "replacements": {
        "actor_rollout_ref.actor.megatron.grad_offload": {
            "replacement": None,
            "why": "removed in verl 0.9.1 (PR #7544, 'remove unused grad_offload'): gradient buffers "
            "follow param_offload; drop the override",
        },
        "actor_rollout_ref.ref.megatron.grad_offload": {
            "replacement": None,
            "why": "removed in verl 0.9.1 (PR #7544): gradient buffers follow param_offload; drop the override",
        },
        "critic.megatron.grad_offload": {
            "replacement": None,
            "why": "removed in verl 0.9.1 (PR #7544): gradient buffers follow param_offload; drop the override",
        },
        "model.partial_pretrain": {
            "replacement": "model.path",
            "why": "verl.trainer.fsdp_sft_trainer and sft_trainer.yaml were removed in 0.7.1 (PR #5382); "
            "sft_trainer_engine names the model model.path",
        },
        "data.prompt_key": {
            "replacement": "data.messages_key",
            "why": "verl.trainer.sft_trainer reads chat-format data: one column with a list of "
            "{role, content} messages (sft_trainer_engine.yaml data.messages_key)",
        },
        "data.response_key": {
            "replacement": "data.messages_key",
            "why": "verl.trainer.sft_trainer reads chat-format data (data.messages_key)",
        },
        "data.prompt_dict_keys": {
            "replacement": "data.messages_key",
            "why": "verl.trainer.sft_trainer reads chat-format data (data.messages_key)",
        },
        "data.response_dict_keys": {
            "replacement": "data.messages_key",
            "why": "verl.trainer.sft_trainer reads chat-format data (data.messages_key)",
        },
    },
    "modules": {
        "verl.trainer.fsdp_sft_trainer": {
            "replacement": "verl.trainer.sft_trainer",
            "why": "removed in verl 0.7.1 (PR #5382) with its sft_trainer.yaml; the successor reads "
            "sft_trainer_engine.yaml and chat-format data",
        },
    },
    # The process group each entry creates, and the knob (if any) that sets its timeout.
    "timeout": {
        "verl.trainer.main_ppo": {"knob": None, "seconds": 1800, "why": _ENGINE_TIMEOUT + "; so " + _TORCH_DEFAULT},
        "verl.trainer.sft_trainer": {"knob": None, "seconds": 36000, "why": _SFT_TIMEOUT},
        "verl.trainer.sft_trainer_ray": {
            "knob": None,
            "seconds": 1800,
            "why": "its workers use " + _ENGINE_TIMEOUT + "; so " + _TORCH_DEFAULT,
        },
    },
    # verl's images carry verl's dependencies, not verl: docker/Dockerfile.stable.vllm installs verl to pull
    # its requirements and then runs `pip uninstall -y verl`, and docs/start/install.rst says "If you use the
    # images provided, you only need to install verl itself without dependencies". No verlai/verl tag names
    # a verl version; the pinned tag is the vLLM image verl's own CI ran at that release (.github/workflows
    # IMAGE), and the workload installs the verl release itself (setup: pip install --no-deps verl==X).
    "images": {
        "0.8.0": {
            "image": "verlai/verl:vllm020.dev1",
            "source": "verl-project/verl@3e4edb6e3 (release/v0.8.0) .github/workflows IMAGE",
        },
        "0.9.0": {
            "image": "verlai/verl:vllm024.dev2",
            "source": "verl-project/verl@885121936 (release/v0.9.0) docker/Dockerfile.stable.vllm "
            "'Target: verlai/verl:vllm024.dev2' and .github/workflows IMAGE",
        },
        "0.9.1": {
            "image": "verlai/verl:vllm024.dev2",
            "source": "same image as 0.9.0 (release/v0.9.0 885121936); 0.9.1 changed no docker/ file "
            "that ncclgen could read",
        },
    },
}

_ENGINE_GROUP = re.compile(r"model_engine|engine|optim")
_ENV_AT_IMPORT = re.compile(r'os\.environ\["([A-Z_][A-Z0-9_]*)"\] = "([^"]*)"')
_HYDRA_MAIN = re.compile(r"@hydra\.main\(\s*config_path\s*=\s*\"([^\"]+)\"\s*,\s*config_name\s*=\s*\"([^\"]+)\"")


def _dead(version: str) -> dict:
    """Dead keys apply from the release that introduced them to every later KB release."""
    out: dict = {}
    for v in VERSIONS:
        out.update(CURATED["dead"].get(v, {}))
        if v == version:
            return out
    raise KeyError(version)


# -- extraction --------------------------------------------------------------------------------------------


def _flatten(node, prefix: str, out: dict) -> None:
    if isinstance(node, dict):
        if not node and prefix:
            out[prefix] = {}
        for k, v in node.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = node


def _compose(config_dir: str, name: str, overrides=()) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name=name, overrides=list(overrides))
    flat: dict = {}
    _flatten(OmegaConf.to_container(cfg, resolve=False), "", flat)
    return flat


def _groups(config_dir: str, name: str) -> dict[str, list[str]]:
    """Top-level defaults-list groups of a config and the options (YAML files) each offers."""
    import yaml

    with open(os.path.join(config_dir, name + ".yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    groups: dict[str, list[str]] = {}
    for entry in doc.get("defaults") or []:
        if not isinstance(entry, dict):
            continue
        for key in entry:
            group = key.split("@", 1)[0].lstrip("/")
            folder = os.path.join(config_dir, group)
            if group.startswith("override ") or not os.path.isdir(folder):
                continue
            opts = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".yaml"))
            groups[group] = opts
    return groups


def extract(root: str) -> dict:
    """Everything tabulated from one release's installed tree (``root`` holds ``verl/``)."""
    trainer = os.path.join(root, "verl", "trainer")
    config_dir = os.path.join(trainer, "config")
    entries: dict[str, str] = {}
    env_set: dict[str, dict[str, dict]] = {}
    for f in sorted(os.listdir(trainer)):
        if f.endswith(".py"):
            with open(os.path.join(trainer, f), encoding="utf-8") as fh:
                text = fh.read()
            m = _HYDRA_MAIN.search(text)
            if m and m.group(1) == "config":
                module = "verl.trainer." + f[:-3]
                entries[module] = m.group(2)
                # Variables the entry module sets unconditionally at import: they win over the job's.
                for i, line in enumerate(text.splitlines(), 1):
                    e = _ENV_AT_IMPORT.fullmatch(line)
                    if e:
                        env_set.setdefault(module, {})[e.group(1)] = {
                            "value": e.group(2),
                            "where": f"verl/trainer/{f}:{i}",
                        }
    names = set(entries.values())
    names |= {
        f[len("_generated_") : -5]
        for f in os.listdir(config_dir)
        if f.startswith("_generated_")
        and f.endswith(".yaml")
        and os.path.exists(os.path.join(config_dir, f[len("_generated_") :]))
    }
    configs = {n: _compose(config_dir, n) for n in sorted(names)}
    groups = {n: _groups(config_dir, n) for n in sorted(names)}
    # Group overrides that swap a whole engine (ppo_trainer model_engine=megatron, sft engine=megatron)
    # change which keys exist: each option is composed too, and named after the config it equals
    # (model_engine=megatron is exactly ppo_megatron_trainer) or as CONFIG[GROUP=OPTION].
    variants: dict[str, dict[str, str]] = {}
    for n in sorted(names):
        for group, opts in groups[n].items():
            if not _ENGINE_GROUP.fullmatch(group):
                continue
            for opt in opts:
                flat = _compose(config_dir, n, [f"{group}={opt}"])
                same = [c for c, f in configs.items() if f == flat]
                target = same[0] if same else f"{n}[{group}={opt}]"
                configs.setdefault(target, flat)
                variants.setdefault(n, {})[f"{group}={opt}"] = target
    with open(os.path.join(root, "verl", "version", "version"), encoding="utf-8") as f:
        version = f.read().strip()
    return {
        "version": version,
        "entries": entries,
        "configs": configs,
        "groups": groups,
        "variants": variants,
        "env_set": env_set,
    }


def _cell(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tables(trees: list[dict], sources: dict[str, str]) -> tuple[str, dict]:
    """keys.tsv text and versions.json data from the extracted trees (oldest first)."""
    # (key, default) -> {config: [versions]}
    rows: dict[tuple[str, str], dict[str, list[str]]] = {}
    for t in trees:
        for cfg, flat in t["configs"].items():
            for key, val in flat.items():
                rows.setdefault((key, _cell(val)), {}).setdefault(cfg, []).append(t["version"])
    names = sorted({c for t in trees for c in t["configs"]})
    letters = {c: chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26) for i, c in enumerate(names)}
    vidx = {t["version"]: str(i) for i, t in enumerate(trees)}
    lines = [
        f"# Generated by `{GENERATOR}` from verl's released wheels (versions.json names them). Do not edit.",
        "# Every Hydra key of each config with its default (JSON, uninterpolated) and where it exists:",
        "# CONFIGS:VERSIONS groups separated by spaces; a letter is a config, a digit a version:",
        "# " + " ".join(f"{letters[c]}={c}" for c in names),
        "# " + " ".join(f"{i}={v}" for v, i in vidx.items()),
        "key\tdefault\twhere",
    ]
    for (key, val), where in sorted(rows.items()):
        by_versions: dict[str, str] = {}
        for cfg, vs in sorted(where.items()):
            code = "".join(vidx[v] for v in vs)
            by_versions[code] = by_versions.get(code, "") + letters[cfg]
        cell = " ".join(f"{cfgs}:{code}" for code, cfgs in sorted(by_versions.items()))
        lines.append(f"{key}\t{val}\t{cell}")
    versions: dict = {}
    prev = None
    for t in trees:
        v = t["version"]
        removed = {}
        if prev is not None:
            for cfg, flat in t["configs"].items():
                for key in sorted(set(prev["configs"].get(cfg, {})) - set(flat)):
                    if not any(key.startswith(k + ".") for k in flat):
                        removed.setdefault(key, prev["version"])
        versions[v] = {
            "wheel": sources[v],
            "entries": t["entries"],
            "groups": t["groups"],
            "variants": t["variants"],
            "env_set": t["env_set"],
            "removed": {k: f"in {v} (present in {p})" for k, p in sorted(removed.items())},
            "dead": _dead(v),
            "timeout": {m: CURATED["timeout"][m] for m in t["entries"] if m in CURATED["timeout"]},
            "image": CURATED["images"][v],
        }
        prev = t
    meta = {
        "generated_by": GENERATOR,
        "versions": versions,
        "configs": letters,
        "order": list(vidx),
        "replacements": CURATED["replacements"],
        "modules": CURATED["modules"],
    }
    return "\n".join(lines) + "\n", meta


def _download(version: str, dest: str) -> str:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"verl=={version}", "-d", dest], check=True
    )
    return os.path.join(dest, f"verl-{version}-py3-none-any.whl")


def _sha(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheels", help="folder holding verl-X-py3-none-any.whl (default: download)")
    ap.add_argument(
        "--check", nargs="+", metavar="ROOT=VERSION", help="compare with installed trees instead of writing"
    )
    a = ap.parse_args(argv)
    if a.check:
        roots = dict(x.split("=", 1)[::-1] for x in a.check)
        trees = [extract(roots[v]) for v in VERSIONS]
        with open(os.path.join(OUT, "versions.json"), encoding="utf-8") as f:
            sources = {v: m["wheel"] for v, m in json.load(f)["versions"].items()}
        text, meta = tables(trees, sources)
        stale = [
            n
            for n, want in (("keys.tsv", text), ("versions.json", _json(meta)))
            if pathlib.Path(OUT, n).read_text(encoding="utf-8") != want
        ]
        for n in stale:
            print(f"ncclgen/data/verl/{n} is stale: run {GENERATOR}", file=sys.stderr)
        return 1 if stale else 0
    with tempfile.TemporaryDirectory() as tmp:
        trees, sources = [], {}
        for v in VERSIONS:
            whl = os.path.join(a.wheels, f"verl-{v}-py3-none-any.whl") if a.wheels else _download(v, tmp)
            root = os.path.join(tmp, v)
            with zipfile.ZipFile(whl) as z:
                z.extractall(root)
            t = extract(root)
            if t["version"] != v:
                raise SystemExit(f"{whl}: verl/version/version says {t['version']}, expected {v}")
            trees.append(t)
            sources[v] = f"verl-{v}-py3-none-any.whl sha256:{_sha(whl)}"
    text, meta = tables(trees, sources)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "keys.tsv"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(OUT, "versions.json"), "w", encoding="utf-8") as f:
        f.write(_json(meta))
    return 0


def _json(meta: dict) -> str:
    return json.dumps(meta, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.exit(main())
