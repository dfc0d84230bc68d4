"""The runner of `microtrain micropython`: ROMFS images, its command line, exit statuses."""

import os
import subprocess
import sys

import pytest

from microtrain.micropython_runner import romfs
from microtrain.tools import micropython as command

from mp_setup import BOARDS, runner_env


def read_varuint(data, at):
    value = 0
    while True:
        byte = data[at]
        at += 1
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at


def read_romfs(data):
    """{path: (offset of its data, bytes)}, read as extmod/vfs_rom.c reads the format."""
    kind, at = read_varuint(data, 0)
    assert kind == 0x14A6B1 and data[:3] == b"\xd2\xcd\x31"
    length, at = read_varuint(data, at)
    assert at + length == len(data) and len(data) % 2 == 0
    found = {}

    def records(start, end, prefix):
        while start < end:
            kind, at = read_varuint(data, start)
            size, at = read_varuint(data, at)
            stop = at + size
            if kind in (4, 5):
                name_length, at = read_varuint(data, at)
                name = data[at:at + name_length].decode()
                at += name_length
                if kind == 4:
                    records(at, stop, prefix + name + "/")
                else:
                    while at < stop:
                        inner, body = read_varuint(data, at)
                        inner_size, body = read_varuint(data, body)
                        if inner == 2:
                            found[prefix + name] = (body, data[body:body + inner_size])
                        at = body + inner_size
            start = stop

    records(at, at + length, "")
    return found


def test_romfs_images_hold_every_file_at_16_byte_alignment():
    for n in range(24):
        files = {"a" * (n % 5 + 1) + ".bin": os.urandom(3 * n + 1),
                 "sub/" + "b" * (n % 3 + 1): os.urandom(n + 7),
                 "sub/deeper/c.mtm": os.urandom(2 * n)}
        found = read_romfs(romfs.build_romfs(files))
        assert {path: data for path, (_, data) in found.items()} == files
        assert all(offset % 16 == 0 for offset, _ in found.values())


def test_data_goes_into_one_image_per_top_level_directory(tmp_path):
    host = tmp_path / "x.bin"
    host.write_bytes(b"12345678")
    mounts = romfs.plan_mounts(["%s=/data/x.bin" % host, "%s=/data/sub/y.bin" % host,
                                "%s=/model/m.mtm" % host])
    assert mounts == {"/data": {"x.bin": str(host), "sub/y.bin": str(host)},
                      "/model": {"m.mtm": str(host)}}
    for bad in ("%s=/x.bin" % host, "%s=data/x.bin" % host, "%s" % host,
                "%s=/data/../x" % host, "%s=/data/x" % (tmp_path / "missing")):
        with pytest.raises(romfs.RunnerError):
            romfs.plan_mounts([bad])


def test_the_script_takes_what_follows_it_but_data_and_out():
    ours, theirs = command.split_command_line(
        ["--board", "unix", "--timeout", "5", "s.py", "2", "--data", "a=/d/a", "--lr",
         "0.1", "--out=o=/out", "--data=b=/d/b"])
    assert ours == ["--board", "unix", "--timeout", "5", "s.py", "--data", "a=/d/a",
                    "--out=o=/out", "--data=b=/d/b"]
    assert theirs == ["2", "--lr", "0.1"]


@pytest.mark.parametrize("board", BOARDS)
def test_output_status_traceback_and_files(board, micropython_firmware, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "print('argv', sys.argv)\n"
        "print('data', open('/data/in/note.txt').read())\n"
        "with open('/out/result.txt', 'w') as handle:\n"
        "    handle.write('written on the board')\n"
        "if sys.argv[1] == 'exit':\n"
        "    sys.exit(3)\n"
        "if sys.argv[1] == 'raise':\n"
        "    raise ValueError('on purpose')\n")
    note = tmp_path / "note.txt"
    note.write_text("hello")
    base = [sys.executable, "-m", "microtrain", "micropython", "--board", board, str(script),
            "--data", "%s=/data/in/note.txt" % note]
    for mode, status in (("ok", 0), ("exit", 3), ("raise", 1)):
        out = tmp_path / mode
        result = subprocess.run(base + ["--out", "%s=/out" % out, mode], capture_output=True,
                                text=True, timeout=120, env=runner_env())
        assert result.returncode == status, result.stderr
        assert "argv ['probe.py', '%s']" % mode in result.stdout
        assert "data hello" in result.stdout
        assert (out / "result.txt").read_text() == "written on the board"
        if mode == "raise":
            assert "ValueError: on purpose" in result.stderr
            assert 'File "probe.py", line 9' in result.stderr
        else:
            assert "Traceback" not in result.stderr


def test_a_missing_firmware_names_the_build_script(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    result = subprocess.run([sys.executable, "-m", "microtrain.tools.micropython", "--board",
                             "mps2-an500", "--firmware", str(tmp_path / "none.elf"),
                             str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "build_firmware.sh" in result.stderr
