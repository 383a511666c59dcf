"""pyxis image references and mounts (ncclgen/render/pyxis.py)."""

from __future__ import annotations

import pytest

from ncclgen.errors import UserError
from ncclgen.render import pyxis


@pytest.mark.parametrize(
    "ref,want",
    [
        ("nvcr.io/nvidia/pytorch:25.01-py3", "nvcr.io#nvidia/pytorch:25.01-py3"),
        ("docker://nvcr.io/nvidia/pytorch:25.01-py3", "docker://nvcr.io#nvidia/pytorch:25.01-py3"),
        ("me@nvcr.io/nvidia/pytorch:25.01-py3", "me@nvcr.io#nvidia/pytorch:25.01-py3"),
        ("registry.example.com:5000/team/verl:0.5", "registry.example.com:5000#team/verl:0.5"),
        ("localhost/verl", "localhost#verl"),
        ("ghcr.io/org/img", "ghcr.io#org/img"),
    ],
)
def test_registry_form_is_rewritten_with_a_note(ref, want):
    fixed, note = pyxis.image_ref(ref)
    assert fixed == want
    assert note and repr(ref) in note and repr(want) in note and "Docker Hub" in note


@pytest.mark.parametrize(
    "ref",
    [
        "nvcr.io#nvidia/pytorch:25.01-py3",  # already pyxis form
        "verlai/verl:latest",  # Docker Hub namespace/image
        "ubuntu:24.04",
        "/shared/images/verl.sqsh",  # squashfs file
        "./verl.sqsh",
        "dockerd://verl:dev",
        "podman://localhost/verl",
    ],
)
def test_other_forms_pass_unchanged(ref):
    assert pyxis.image_ref(ref) == (ref, None)


@pytest.mark.parametrize("ref", ["", " ubuntu", "a b"])
def test_bad_image_refused(ref):
    with pytest.raises(UserError, match="expected"):
        pyxis.image_ref(ref)


@pytest.mark.parametrize("mount", ["/lustre", "/lustre:/data", "/lustre:/data:ro+rprivate"])
def test_mount_ok(mount):
    assert pyxis.check_mount(mount) == mount


@pytest.mark.parametrize("mount", ["", ":/data", "/lustre:", "/a:/b,/c:/d", "/a\n:/b"])
def test_mount_refused(mount):
    with pytest.raises(UserError, match="SRC"):
        pyxis.check_mount(mount)
