"""A counting TCP relay: the bytes that cross one link of a deployment, on the wire.

    relay = CountingRelay(("127.0.0.1", superlink_port))
    relay.start()          # SuperNodes connect to 127.0.0.1:relay.port instead
    ...
    relay.totals()         # {"to_server": bytes, "to_clients": bytes, "connections": n}
    relay.stop()

The kernel keeps no byte counts per process for sockets (/proc/PID/io's rchar and wchar
count read(2)/write(2), not send/recv), so the benchmark puts this relay between the
SuperNodes and the SuperLink: everything the Fleet API carries (HTTP, protobuf, TLS when
on) passes through it and is counted as it is forwarded. One thread, non-blocking sockets
(``selectors``), bound to 127.0.0.1 only.
"""

import selectors
import socket
import threading

from .processes import free_port

_CHUNK = 1 << 16


class CountingRelay(threading.Thread):
    """Forwards connections to ``target`` ((host, port)) and counts their bytes."""

    def __init__(self, target):
        threading.Thread.__init__(self, daemon=True)
        self.target = target
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._counts = {"to_server": 0, "to_clients": 0, "connections": 0}
        self._pending = {}   # socket -> bytes waiting to be written to it
        self._peer = {}      # socket -> the other end
        self._stopped = threading.Event()

    def totals(self):
        with self._lock:
            return dict(self._counts)

    def stop(self):
        self._stopped.set()
        self.join(5)
        for sock in list(self._peer) + [self._listener]:
            try:
                sock.close()
            except OSError:
                pass
        self._selector.close()

    def run(self):
        while not self._stopped.is_set():
            for key, events in self._selector.select(timeout=0.2):
                if key.data is None:
                    self._accept()
                    continue
                sock, direction = key.fileobj, key.data
                if events & selectors.EVENT_READ:
                    self._forward(sock, direction)
                if events & selectors.EVENT_WRITE and sock in self._peer:
                    self._flush(sock)

    def _accept(self):
        try:
            client, _ = self._listener.accept()
        except OSError:
            return
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        for sock in (client, server):
            sock.setblocking(False)
            self._pending[sock] = b""
        self._peer[client], self._peer[server] = server, client
        self._selector.register(client, selectors.EVENT_READ, "to_server")
        self._selector.register(server, selectors.EVENT_READ, "to_clients")
        with self._lock:
            self._counts["connections"] += 1

    def _forward(self, sock, direction):
        try:
            data = sock.recv(_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close(sock)
            return
        with self._lock:
            self._counts[direction] += len(data)
        peer = self._peer[sock]
        self._pending[peer] += data
        self._flush(peer)

    def _flush(self, sock):
        data = self._pending.get(sock, b"")
        if data:
            try:
                sent = sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._close(sock)
                return
            self._pending[sock] = data = data[sent:]
        direction = self._selector.get_key(sock).data
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if data else 0)
        self._selector.modify(sock, events, direction)

    def _close(self, sock):
        peer = self._peer.pop(sock, None)
        if peer is not None:
            self._peer.pop(peer, None)
        for end in (sock, peer):
            if end is None:
                continue
            try:
                self._selector.unregister(end)
            except (KeyError, ValueError):
                pass
            try:
                end.close()
            except OSError:
                pass
            self._pending.pop(end, None)
