"""Compose verl launch lines through Hydra exactly as ``@hydra.main`` does, then validate them with verl.

Run with one installed verl release on PYTHONPATH (``pip install --no-deps --target ROOT verl==X``):

    PYTHONPATH=ROOT python tests/verl_compose.py OUT.json [--validate] < jobs.json

stdin: a JSON list of argv lists (``python3 -m MODULE [--config-name=N] OVERRIDES...``). OUT.json: a
JSON list, one {"composed": bool, "error": str|null, "validated": bool|null} per job (verl prints to
stdout, so results go to a file).

Composition: ``hydra.main(config_path=<verl/trainer/config>, config_name=<the entry's>)`` wraps a
function that keeps the config, and is called with sys.argv set to the job's arguments, so Hydra's
own command-line parser, defaults list and struct-mode overrides decide, as in the real entry point.
Three Hydra-only overrides keep Hydra from writing output folders and logs here.

Validation is what the entry point runs before any GPU work, on CPU (HFModelConfig's Hub download
stubbed, see _offline_model_config):
  verl.trainer.main_ppo   verl.utils.config.validate_config(config, need_reference_policy,
                          need_critic) (0.9.1 main_ppo.main)
  verl.trainer.sft_trainer  omega_conf_to_dataclass of engine, optim, checkpoint and profiler
                          (SFTTrainer._build_config; model is left out: HFModelConfig fetches from the Hub)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

HYDRA_QUIET = ["hydra.output_subdir=null", "hydra/job_logging=disabled", "hydra/hydra_logging=disabled"]


def compose(argv: list[str], entries: dict[str, str], config_dir: str):
    import hydra
    from hydra.core.global_hydra import GlobalHydra

    module = argv[argv.index("-m") + 1]
    rest = argv[argv.index("-m") + 2 :]
    got = {}

    def task(cfg):
        got["cfg"] = cfg

    GlobalHydra.instance().clear()
    main = hydra.main(config_path=config_dir, config_name=entries[module], version_base=None)(task)
    saved = sys.argv
    with tempfile.TemporaryDirectory() as run_dir:
        sys.argv = [module, *rest, *HYDRA_QUIET, f"hydra.run.dir={run_dir}"]
        try:
            main()
        finally:
            sys.argv = saved
    return module, got["cfg"]


def _offline_model_config() -> None:
    """Stand-in: HFModelConfig.__post_init__ downloads the model's config and tokenizer from the
    Hugging Face Hub, which cannot be reached here; it becomes a no-op, so model-dependent checks
    (vocabulary, architecture) are not exercised. Every other dataclass check runs as released."""
    from verl.workers.config import model

    model.HFModelConfig.__post_init__ = lambda self: None


def validate(module: str, cfg) -> None:
    _offline_model_config()
    if module == "verl.trainer.main_ppo":
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import validate_config

        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    elif module == "verl.trainer.sft_trainer":
        from verl.utils.config import omega_conf_to_dataclass

        for section in ("engine", "optim", "checkpoint", "profiler"):
            omega_conf_to_dataclass(cfg[section])
    else:
        raise ValueError(f"no CPU validation for {module}")


def main() -> int:
    os.environ["HYDRA_FULL_ERROR"] = "1"  # raise the composition error instead of printing it
    import importlib.util

    # Found without importing verl (its __init__ pulls torch, tensordict, transformers: ~20 s).
    root = importlib.util.find_spec("verl").submodule_search_locations[0]
    config_dir = os.path.join(root, "trainer", "config")
    entries = {"verl.trainer.main_ppo": "ppo_trainer", "verl.trainer.sft_trainer": "sft_trainer_engine"}
    jobs = json.load(sys.stdin)
    out = []
    for argv in jobs:
        res = {"composed": False, "error": None, "validated": None}
        try:
            module, cfg = compose(argv, entries, config_dir)
            res["composed"] = True
            if "--validate" in sys.argv[1:]:
                validate(module, cfg)
                res["validated"] = True
        except SystemExit as e:
            res["error"] = f"exited {e.code}"
        except BaseException as e:
            res["error"] = f"{type(e).__name__}: {e}"
            if res["composed"]:
                res["validated"] = False
        out.append(res)
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
