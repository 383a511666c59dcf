"""Kubernetes quantities in the descriptor follow the API server's grammar (k8s.io/apimachinery
pkg/api/resource/quantity.go, kubernetes/apimachinery@357557a6 lines 39-51 and ParseQuantity): every form
the API server takes is read (500m was refused as 'not a quantity like 5120Mi'), every form it refuses is
refused here too, with the descriptor's file, line and key path."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from test_descriptor import edit, line_of, write

from ncclgen.errors import UserError
from ncclgen.load import descriptor, quantity
from ncclgen.load.patterns import QUANTITY
from ncclgen.node import doctor

# text: value, as ParseQuantity reads it
ACCEPTED = {
    "16": Decimal(16),
    "500m": Decimal("0.5"),
    "1500m": Decimal("1.5"),
    "0": Decimal(0),
    "1.5Gi": Decimal(3 * 2**29),
    "5120Mi": Decimal(5120 * 2**20),
    "32M": Decimal(32 * 10**6),
    "1k": Decimal(1000),
    "250u": Decimal("0.00025"),
    "7n": Decimal("7e-9"),
    "12e6": Decimal(12 * 10**6),
    "1E-2": Decimal("0.01"),
    "1e+3": Decimal(1000),
    "1.": Decimal(1),  # <digits>.
    ".5": Decimal("0.5"),  # .<digits>
    "+2": Decimal(2),
    "-1": Decimal(-1),  # a quantity; the descriptor refuses it as negative
    "2Ei": Decimal(2 * 2**60),
}
# Not quantities: ParseQuantity returns ErrFormatWrong, ErrSuffix or ErrNumeric for each.
REFUSED = ["", ".", "32 GB", "1K", "1KiB", "1mi", "Mi", "e3", "1e", "1e+", "1e1.5", "1.5.5", "0x10", " 16", "1Gi "]


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted_forms_and_their_values(text):
    assert re.fullmatch(QUANTITY, text)
    assert quantity.value(text) == ACCEPTED[text]


@pytest.mark.parametrize("text", REFUSED)
def test_refused_forms(text):
    assert not re.fullmatch(QUANTITY, text)
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        quantity.value(text)


def test_doctor_reads_shm_size_in_bytes():
    assert doctor.quantity_bytes("1.5Gi") == 3 * 2**29
    assert doctor.quantity_bytes("64e9") == 64 * 10**9


def _load(tmp_path, text):
    return descriptor.load(write(tmp_path, text), warnings=False)


@pytest.mark.parametrize("memory", ["500m", "1.5Gi", "200e9", "+16Gi"])
def test_descriptor_reads_every_quantity_form(tmp_path, memory):
    d = _load(
        tmp_path, edit("kubernetes:\n  source: a\n", f"kubernetes:\n  source: a\n  resources:\n    memory: {memory}\n")
    )
    assert d.kubernetes.resources["memory"] == memory


def _refused(tmp_path, text, marker):
    file = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        descriptor.load(file)
    assert info.value.line == line_of(text, marker), str(info.value)
    return info.value


def test_descriptor_refuses_a_malformed_quantity_with_the_forms_it_takes(tmp_path):
    text = edit("kubernetes:\n  source: a\n", "kubernetes:\n  source: a\n  resources:\n    memory: 32 GB\n")
    err = _refused(tmp_path, text, "32 GB")
    assert err.path == "kubernetes.resources.memory"
    assert "'32 GB' is not a Kubernetes quantity (like 16, 500m, 5120Mi or 1.5Gi)" in err.message


def test_descriptor_refuses_a_negative_request(tmp_path):
    text = edit("kubernetes:\n  source: a\n", "kubernetes:\n  source: a\n  resources:\n    memory: -1Gi\n")
    err = _refused(tmp_path, text, "-1Gi")
    assert err.path == "kubernetes.resources.memory" and "negative" in err.message


@pytest.mark.parametrize("size", ["0", "-64Gi", "500m"])
def test_shm_size_must_be_above_zero_bytes(tmp_path, size):
    text = edit("kubernetes:\n  source: a\n", f'kubernetes:\n  source: a\n  shm_size: "{size}"\n')
    err = _refused(tmp_path, text, "shm_size")
    assert err.path == "kubernetes.shm_size"
