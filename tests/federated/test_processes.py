"""The process and socket bookkeeping of a deployment (microtrain.federated.processes and
traffic), on small stand-ins instead of Flower's servers, in a few seconds:

* a process carrying a deployment's marker is found wherever it runs, in a session of its
  own too, its listening sockets with it, and ``sweep`` kills it (and only it);
* ``stop`` ends a process group with SIGTERM, and SIGKILLs a marked process that ignores
  SIGTERM once the grace period is over;
* ``free_port`` picks ports below the kernel's ephemeral range;
* the counting relay forwards a connection both ways and counts its bytes exactly.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

from microtrain.federated import processes
from microtrain.federated.traffic import CountingRelay

# listens on 127.0.0.1:PORT (argv[1]) and waits; with argv[2] == "stubborn", ignores SIGTERM
_SERVER = """
import signal, socket, sys, time
if sys.argv[2] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
print("ready", flush=True)
time.sleep(120)
"""


def start(deployment_id, mode="plain", **options):
    port = processes.free_port()
    env = dict(os.environ, **{processes.MARKER: deployment_id})
    child = subprocess.Popen([sys.executable, "-c", _SERVER, str(port), mode], env=env,
                             stdout=subprocess.PIPE, text=True, **options)
    assert child.stdout.readline().strip() == "ready"
    return child, port


def test_marked_processes_are_found_with_their_sockets_and_swept():
    deployment_id = uuid.uuid4().hex
    other_id = uuid.uuid4().hex
    child, port = start(deployment_id, start_new_session=True)
    bystander, _ = start(other_id)
    try:
        found = processes.marked(deployment_id)
        assert list(found) == [child.pid] and "python" in found[child.pid]
        assert processes.listening_sockets(found) == [(child.pid, found[child.pid],
                                                       "127.0.0.1", port)]
        assert processes.sweep(deployment_id) == found
        assert child.wait(timeout=10) == -signal.SIGKILL
        assert not processes.marked(deployment_id)
        assert bystander.poll() is None  # another deployment's process is untouched
    finally:
        for process in (child, bystander):
            process.kill()
            process.wait()


def test_stop_ends_groups_and_kills_what_ignores_sigterm():
    deployment_id = uuid.uuid4().hex
    polite, _ = start(deployment_id, start_new_session=True)
    stubborn, _ = start(deployment_id, "stubborn", start_new_session=True)
    began = time.monotonic()
    # (stop reaps this process's exited children, as the supervisor it is written for)
    killed = processes.stop([polite.pid], deployment_id, grace=1.0)
    try:
        assert list(killed) == [stubborn.pid]  # the polite one ended within the grace
        assert 1.0 <= time.monotonic() - began < 10
        assert not os.path.exists("/proc/%d" % polite.pid)  # ended and reaped
        assert not os.path.exists("/proc/%d" % stubborn.pid)
        assert not processes.marked(deployment_id)
    finally:
        for process in (polite, stubborn):
            process.kill()
            process.wait()


def test_free_ports_lie_below_the_ephemeral_range():
    low, _ = processes._ephemeral_ports()
    for _ in range(20):
        port = processes.free_port()
        assert port < low
        socket.create_server(("127.0.0.1", port)).close()  # and it is free


def test_the_relay_forwards_and_counts_every_byte():
    server = socket.create_server(("127.0.0.1", 0))
    relay = CountingRelay(server.getsockname())
    relay.start()
    try:
        client = socket.create_connection(("127.0.0.1", relay.port), timeout=10)
        upstream, _ = server.accept()
        upstream.settimeout(10)
        request = bytes(range(256)) * 1000
        client.sendall(request)
        got = b""
        while len(got) < len(request):
            got += upstream.recv(65536)
        assert got == request
        upstream.sendall(b"reply" * 7)
        answer = b""
        while len(answer) < 35:
            answer += client.recv(65536)
        assert answer == b"reply" * 7
        client.close()
        upstream.close()
        deadline = time.monotonic() + 5
        while relay.totals()["to_clients"] < 35 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert relay.totals() == {"to_server": 256000, "to_clients": 35, "connections": 1}
    finally:
        relay.stop()
        server.close()
