"""Line forms a held-out round (session 40) found unread, each checked on lines shaped as the sources print them:
a rule that regresses makes one of these fail."""

from __future__ import annotations

import pytest
import triage_json


@pytest.mark.parametrize(
    "text, where",
    [
        # Rust 1.73 and later: the location, the message on the next line; newer releases add the thread's id
        (
            "thread '<unnamed>' panicked at src/actor_mesh.rs:394:33:\ncalled `Result::unwrap()` on an `Err` value",
            "src/actor_mesh.rs:394:33",
        ),
        (
            "thread 'tokio-runtime-worker' (1774) panicked at vendor/tracing-subscriber-0.3.23/src/registry/sharded.rs:306:32:\nno span",
            "vendor/tracing-subscriber-0.3.23/src/registry/sharded.rs:306:32",
        ),
        # before Rust 1.73: the message first, quoted
        ("thread 'main' panicked at 'called `Option::unwrap()` on a `None` value', src/main.rs:4:5", "src/main.rs:4:5"),
    ],
)
def test_a_rust_panic_is_a_root_naming_its_location(tmp_path, text, where):
    data = triage_json.triage(tmp_path, "starting\n" + text + "\n")
    assert data["first"]["signature"] == "rust-panic" and data["first"]["where"].endswith(":2")
    assert f"panicked at {where}:" in data["cause"]


@pytest.mark.parametrize(
    "text, sig",
    [
        # folly's signal handler puts the fault address after the signal's name; glog's puts it after '@'
        (
            " *** Signal 11 (SIGSEGV) (0x4) received by PID 656680 (pthread TID 0x7f46) (linux TID 660884) (code: address not mapped to object), stack trace: ***",
            "process-crash",
        ),
        ("*** SIGSEGV (@0x0) received by PID 1234 (TID 0x7f00) from PID 0; stack trace: ***", "process-crash"),
        (
            "*** Signal 6 (SIGABRT) (0x3e8000a0a50) received by PID 656 (pthread TID 0x7f46) (linux TID 66), stack trace: ***",
            "process-abort",
        ),
    ],
)
def test_folly_s_and_glog_s_signal_lines(tmp_path, text, sig):
    data = triage_json.triage(tmp_path, text + "\n")
    assert data["first"]["signature"] == sig


@pytest.mark.parametrize(
    "text",
    [
        "[W610 20:53:05.835803044 socket.cpp:755] [c10d] The server socket has failed to bind to [fe80::1]:29500 (errno: 99 - Cannot assign requested address).",
        "torch.distributed.DistNetworkError: The server socket has failed to bind. useIpv6: false, code: -99, name: EADDRNOTAVAIL, message: address not available",
        "node1:123:456 [0] misc/socket.cc:445 NCCL WARN Call to bind failed : Cannot assign requested address",
        "[-]E0924 09:15:29.915414 373140 hyperactor/src/channel.rs:620] error:listen: tcp:[2401:db00::1]:0 Cannot assign requested address (os error 99)",
    ],
)
def test_a_bind_to_an_address_the_host_lacks(tmp_path, text):
    data = triage_json.triage(tmp_path, text + "\n")
    assert data["first"]["signature"] == "bind-address-not-local"
    assert "ip -br addr" in data["fix"]


def test_a_client_s_connect_with_the_same_errno_is_not_a_bind(tmp_path):
    """connect(2)'s EADDRNOTAVAIL (no local port left, a wildcard peer) is another cause."""
    line = "[W610 20:53:05.835 socket.cpp:755] [c10d] The client socket has failed to connect to [10.0.0.2]:60533 (errno: 99 - Cannot assign requested address)."
    assert triage_json.triage(tmp_path, line + "\n").get("first", {}).get("signature") != "bind-address-not-local"
