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


def test_a_folly_abort_is_a_symptom_of_what_came_before(tmp_path):
    line = "*** Signal 6 (SIGABRT) (0x3e8000a0a50) received by PID 656 (pthread TID 0x7f46) (linux TID 66), stack trace: ***"
    assert triage_json.triage(tmp_path, line + "\n")["first"]["signature"] == "process-abort"


C10D_BIND = "[W610 20:53:05.835803044 socket.cpp:755] [c10d] The server socket has failed to bind to [fe80::1]:29500 (errno: {n} - {msg})."
C10D_LISTEN = "[E610 20:53:05.835903044 socket.cpp:800] [c10d] The server socket has failed to listen on any local network address."


def test_c10d_s_bind_warning_is_the_cause_only_when_no_address_could_listen(tmp_path):
    """c10d warns for each address it cannot bind and tries the next; ssh's port forward tries IPv6 and IPv4
    loopback: alone, a run that went on (NeMo RL's debugging page calls ssh's line expected)."""
    bind = C10D_BIND.format(n=99, msg="Cannot assign requested address")
    assert triage_json.triage(tmp_path, bind + "\n")["status"] == "clean"
    assert triage_json.triage(tmp_path, "bind [::1]:52640: Cannot assign requested address\n")["status"] == "clean"
    data = triage_json.triage(tmp_path, f"{bind}\n{C10D_LISTEN}\n")
    assert data["first"]["signature"] == "bind-address-not-local-try" and data["first"]["where"].endswith(":1")
    busy = C10D_BIND.format(n=98, msg="Address already in use")
    assert triage_json.triage(tmp_path, f"{busy}\n{C10D_LISTEN}\n")["first"]["signature"] == "address-in-use"
    alone = triage_json.triage(tmp_path, C10D_LISTEN + "\n")
    assert alone["first"]["signature"] == "store-listen-failed" and alone["status"] == "unclassified"


def test_a_client_s_connect_with_the_same_errno_is_not_a_bind(tmp_path):
    """connect(2)'s EADDRNOTAVAIL (no local port left, a wildcard peer) is another cause."""
    line = "[W610 20:53:05.835 socket.cpp:755] [c10d] The client socket has failed to connect to [10.0.0.2]:60533 (errno: 99 - Cannot assign requested address)."
    assert triage_json.triage(tmp_path, line + "\n").get("first", {}).get("signature") != "bind-address-not-local"


def test_a_run_inside_one_container_dials_its_own_bridge_address(tmp_path):
    """Ray's memory monitor page: a driver in a container connects to 172.17.0.2 and works; the failure is the OOM
    kill that follows, not the bridge."""
    log = (
        "INFO worker.py:1342 -- Connecting to existing Ray cluster at address: 172.17.0.2:6379...\n"
        "INFO worker.py:1525 -- Connected to Ray cluster. View the dashboard at http://127.0.0.1:8265\n"
        "Memory on the node (IP: 172.17.0.2, ID: 3a4b) where the task was running was 32.91GB / 33.28GB (0.988698), "
        "which exceeds the memory usage threshold of 0.969955. Ray killed this worker (ID: 5c9a) because it was the "
        "most recently scheduled task\n"
    )
    data = triage_json.triage(tmp_path, log)
    assert data["first"]["signature"] == "ray-oom-kill" and data["first"]["where"].endswith(":3")
    refused = "failed to connect to 172.17.0.2:6379: Connection refused\n"
    assert triage_json.triage(tmp_path, refused)["first"]["signature"] == "container-bridge-address"


def test_pod_security_admission_refused_the_pods(tmp_path):
    line = (
        '2m36s Warning FailedCreate daemonset/mofed-ds Error creating: pods "mofed-ds-rwmgs" is forbidden: violates '
        'PodSecurity "baseline:latest": host namespaces (hostNetwork=true), privileged (container "mofed" must not '
        "set securityContext.privileged=true)\n"
    )
    data = triage_json.triage(tmp_path, line)
    assert data["first"]["signature"] == "pod-security-forbidden"
    assert data["cause"].startswith("the namespace enforces the Pod Security level baseline:latest, which refuses")


REVERSE_DNS = (
    "[W724 18:22:38.909218572 socket.cpp:200] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
)


def test_c10d_s_failing_reverse_lookups_are_a_note_and_the_cause_of_a_store_timeout(tmp_path):
    """pytorch#159007: each failed getnameinfo blocked ten seconds; init crawled but went on."""
    data = triage_json.triage(tmp_path, REVERSE_DNS * 3)
    assert data["status"] == "clean" and [n["class"] for n in data["notes"]] == ["reverse-dns-slow"]
    assert "err=-3; -3 is EAI_AGAIN" in data["notes"][0]["says"]
    timed_out = triage_json.triage(tmp_path, REVERSE_DNS * 3 + "torch.distributed.DistStoreError: Socket Timeout\n")
    assert timed_out["first"]["signature"] == "reverse-dns-slow" and timed_out["status"] == "cause"


def lookup(clock: str, err: str = "-3") -> str:
    return f"[W724 {clock}.909218572 socket.cpp:200] [c10d] The hostname of the client socket cannot be retrieved. err={err}\n"


def test_timed_out_lookups_ten_seconds_apart_are_a_slow_set_up_and_quick_failures_are_not(tmp_path):
    """With their lines' times, three resolver timeouts (err=-3) in a row, each one resolver timeout after the one
    before, are the set-up's slowness (status slow, exit 0, the span measured); failures that came at once (err=-2),
    lines closer than a resolver timeout, or two lookups half a minute apart (torchrun's agent's store, then the
    ranks', torchtitan#3393's healthy run) stay a note, and a timeout after them is still the cause."""
    spaced = lookup("18:22:38") + lookup("18:22:48") + lookup("18:22:58") + "step 1 loss 2.3\n"
    data = triage_json.triage(tmp_path, spaced)
    assert data["status"] == "slow" and data["_code"] == 0
    assert data["first"]["signature"] == "reverse-dns-slowed" and data["first"]["where"].endswith(":1")
    assert "3 lookups in a row failed only after the resolver's timeout" in data["cause"]
    assert "20 s from first to last" in data["cause"]
    quick = lookup("18:22:38", "-2") + lookup("18:22:48", "-2") + lookup("18:22:58", "-2")
    close = lookup("18:22:38") + lookup("18:22:39") + lookup("18:22:40")
    two_stores = lookup("18:22:38") + lookup("18:23:09")
    for log in (quick, close, two_stores):
        assert triage_json.triage(tmp_path, log)["status"] == "clean", log
    failed = triage_json.triage(tmp_path, spaced + "torch.distributed.DistStoreError: Socket Timeout\n")
    assert failed["status"] == "cause" and failed["first"]["signature"] == "reverse-dns-slow"
