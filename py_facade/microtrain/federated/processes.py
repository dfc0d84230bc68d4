"""The processes of a local deployment, owned as one and stopped as one (Linux).

Flower's servers start processes of their own, some in sessions of their own (the
SuperLink's SuperExec and its ServerApps, each message's ClientApp), so a process group
does not hold them all. Three things do:

* **a marker in the environment**: every process the deployment starts carries
  ``MICROTRAIN_DEPLOYMENT=<id>`` and passes it to its children (Flower starts them with
  its own environment), so ``marked(id)`` finds each of them wherever it was reparented;
* **a child subreaper** (``become_subreaper``: prctl PR_SET_CHILD_SUBREAPER): the
  supervisor, not init, adopts every orphan of its tree and reaps it (``reap``), so no
  zombie is left behind either;
* **a parent-death signal** (``die_with_parent``): if whatever started the supervisor
  dies, the supervisor gets SIGTERM and stops the deployment.

``listening_sockets(pids)`` lists the TCP sockets those processes listen on (a test checks
that each is on 127.0.0.1 and that none is left); ``free_port`` picks the ports.
"""

import ctypes
import os
import random
import signal
import socket
import time

MARKER = "MICROTRAIN_DEPLOYMENT"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option, value):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(%d) failed" % option)


def become_subreaper():
    """Adopt this process's orphaned descendants (Linux 3.4+)."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(signal_number=signal.SIGTERM):
    """Receive ``signal_number`` when the parent process ends."""
    _prctl(_PR_SET_PDEATHSIG, int(signal_number))


def _state(pid):
    """(state letter, parent pid) of a process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _name(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            words = handle.read().split(b"\0")
        text = b" ".join(w for w in words[:3] if w).decode("utf-8", "replace")
        return text[:160]
    except OSError:
        return "?"


def marked(deployment_id, include_zombies=False):
    """{pid: command} of the live processes whose environment carries the marker."""
    needle = ("%s=%s" % (MARKER, deployment_id)).encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open("/proc/%d/environ" % pid, "rb") as handle:
                environment = handle.read().split(b"\0")
        except OSError:
            continue
        if needle in environment:
            state = _state(pid)
            if state is not None and (include_zombies or state[0] != "Z"):
                found[pid] = _name(pid)
    return found


def reap():
    """Collect every exited child (orphans included, as a subreaper); their pids."""
    reaped = []
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append(pid)


def signal_group(pid, signal_number):
    """Signal the process group led by ``pid`` (each server runs in one of its own)."""
    try:
        os.killpg(pid, signal_number)
    except (ProcessLookupError, PermissionError):
        pass


def sweep(deployment_id, keep=(), rounds=50):
    """SIGKILL every marked process but ``keep`` (and this one), going round until none is
    left (one may fork while we look); returns {pid: command} of those killed. It reaps
    nothing: the caller reaps its own children."""
    keep = set(keep) | {os.getpid()}
    killed = {}
    for _ in range(rounds):
        left = {pid: name for pid, name in marked(deployment_id).items() if pid not in keep}
        if not left:
            break
        for pid, name in left.items():
            killed[pid] = name
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return killed


def stop(groups, deployment_id, grace=5.0, keep=()):
    """For the supervisor (a subreaper): SIGTERM each process group in ``groups`` (in
    order) and every other marked process but ``keep``, wait up to ``grace`` seconds for
    them to end, then SIGKILL what is left; reaps every exited child of this process as
    it goes. Returns {pid: command} of those that needed SIGKILL."""
    keep = set(keep) | {os.getpid()}
    for pid in groups:
        signal_group(pid, signal.SIGTERM)
    for pid in marked(deployment_id):  # those in sessions of their own too
        if pid not in keep:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap()
        if not [pid for pid in marked(deployment_id) if pid not in keep]:
            settle()
            return {}
        time.sleep(0.1)
    for pid in groups:
        signal_group(pid, signal.SIGKILL)
    killed = {}
    for _ in range(50):
        time.sleep(0.05)
        reap()
        left = {pid: name for pid, name in marked(deployment_id).items() if pid not in keep}
        if not left:
            break
        killed.update(sweep(deployment_id, keep, rounds=1))
    settle()
    return killed


def settle(quiet=0.3, limit=3.0):
    """Reap until no child has exited for ``quiet`` seconds (a process that just died
    leaves its zombie a moment later), at most ``limit`` seconds."""
    end = time.monotonic() + limit
    last = time.monotonic()
    while time.monotonic() < end and time.monotonic() - last < quiet:
        if reap():
            last = time.monotonic()
        time.sleep(0.05)


def _socket_inodes(pid):
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _address(hex_address, family):
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    if family == 4:
        return ".".join(str(b) for b in raw[::-1]), int(port, 16)
    words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]  # four little-endian words
    import ipaddress
    return str(ipaddress.IPv6Address(b"".join(words))), int(port, 16)


def listening_sockets(pids):
    """[(pid, command, address, port)] of the TCP sockets ``pids`` listen on."""
    owner = {}
    for pid in pids:
        for inode in _socket_inodes(pid):
            owner.setdefault(inode, pid)
    found = []
    for path, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        try:
            with open(path) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in owner:  # LISTEN
                host, port = _address(fields[1], family)
                pid = owner[fields[9]]
                found.append((pid, _name(pid), host, port))
    return sorted(found)


def _ephemeral_ports():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
            low, high = (int(word) for word in handle.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port(host="127.0.0.1", tries=200):
    """A TCP port free on ``host`` now, below the kernel's ephemeral range: a server told
    to bind it a moment later cannot lose it to an outgoing connection (which takes its
    local port from that range), only to another program binding the same port."""
    low, _ = _ephemeral_ports()
    first = 10000 if low > 12000 else 1024
    for _ in range(tries):
        port = random.randrange(first, low)
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            probe.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            probe.close()
    raise OSError("no free TCP port on %s below %d after %d tries" % (host, low, tries))
