"""NCCL net plugins as data (ncclgen/data/plugins.yaml): where each lives per platform, the name it
registers, what loads it, the variables it needs, the files that must exist, its Kubernetes elements.

The plan emits what loads the descriptor's plugin (LD_LIBRARY_PATH or NCCL_NET_PLUGIN) and NCCL_NET at
tier 1; the pod view adds the plugin's volumes, sidecars and annotations for the cluster's flavour.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Literal

from .. import datapaths
from ..record import dataclass
from .descriptor import ENV_NAME, Sidecar, Volume
from .schema import field, load_dataclass
from .yamlio import load_file

PLATFORMS = ("host", "gke", "eks", "aks", "oke", "generic")


@dataclass(frozen=True, kw_only=True)
class PluginEnv:
    """A variable the plugin needs, emitted at tier 1 together with what loads it."""

    name: str = field(pattern=ENV_NAME, pattern_doc="an environment variable name")
    value: str = field(scalar=True)
    reason: str = field()
    source: str = field()


@dataclass(frozen=True, kw_only=True)
class Location:
    """Where the plugin is on one platform, and what a pod there needs for it."""

    lib_dir: str = field(pattern=r"/[^\s:]*", pattern_doc="an absolute path without ':' or spaces")
    source: str = field()
    container_mount: bool = field(False)  # host: a pyxis container needs the folder mounted (same path)
    volumes: tuple[Volume, ...] = field(())
    sidecars: tuple[Sidecar, ...] = field(())
    annotations: dict[str, str] = field(factory=dict)
    device_annotations: dict[str, tuple[str, ...]] = field(factory=dict)
    # Where no volume brings the folder from the node, the pod image must carry the plugin: how to get
    # such an image, said when ncclgen k8s refuses to render with a default image.
    image_hint: str | None = field(None)


@dataclass(frozen=True, kw_only=True)
class Plugin:
    """One NCCL net plugin."""

    id: str = field()
    description: str = field()
    net_name: str | None = field()
    net_name_source: str = field()
    load: Literal["ld_library_path", "net_plugin"] = field()
    load_source: str = field()
    library: str = field()
    files: tuple[str, ...] = field()
    collnet: bool = field(False)
    package: str | None = field(None)  # the name in the plugin's own init line (transport check)
    min_version: str | None = field(None)  # the oldest release the plan works with (transport check)
    min_version_source: str | None = field(None)
    only_vars: tuple[str, ...] = field(())
    env: tuple[PluginEnv, ...] = field(())
    platforms: dict[str, Location] = field(key_pattern="|".join(PLATFORMS), key_pattern_doc="host or a flavour")

    def location(self, platform: str) -> Location | None:
        return self.platforms.get(platform)

    def owns(self, var: str) -> bool:
        """True when ``var`` takes effect only through this plugin."""
        return any(fnmatch.fnmatchcase(var, pat) for pat in self.only_vars)


@dataclass(frozen=True, kw_only=True)
class PluginFile:
    plugins: tuple[Plugin, ...] = field()


@functools.lru_cache(maxsize=1)
def all_plugins() -> dict[str, Plugin]:
    doc = load_file(datapaths.data("plugins.yaml"))
    data = load_dataclass(doc, doc.data, PluginFile)
    return {p.id: p for p in data.plugins}


def get(plugin_id: str) -> Plugin | None:
    """The plugin ncclgen knows under ``plugin_id`` (network.net_plugin), or None."""
    return all_plugins().get(plugin_id)


def owner(var: str) -> Plugin | None:
    """The plugin through which alone ``var`` takes effect, or None."""
    return next((p for p in all_plugins().values() if p.owns(var)), None)
