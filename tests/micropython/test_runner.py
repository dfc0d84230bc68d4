"""The runner of `microtrain micropython`: ROMFS images, its command line, exit statuses."""

import os
import subprocess
import sys

import pytest

from microtrain.micropython_runner import romfs
from microtrain.tools import micropython as command

from mp_setup import BOARDS, ROOT, runner_env


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


def test_the_script_takes_everything_that_follows_it():
    """The runner's options come before the script; after it, even --data and --out are the
    script's (examples/micropython_digits.py takes its own --data)."""
    ours, theirs = command.split_command_line(
        ["--board", "unix", "--data", "a=/d/a", "--out=o=/out", "--timeout", "5", "s.py", "2",
         "--data", "/d", "--lr", "0.1", "--out=x"])
    assert ours == ["--board", "unix", "--data", "a=/d/a", "--out=o=/out", "--timeout", "5",
                    "s.py"]
    assert theirs == ["2", "--data", "/d", "--lr", "0.1", "--out=x"]


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
    base = [sys.executable, "-m", "microtrain", "micropython", "--board", board,
            "--data", "%s=/data/in/note.txt" % note]
    for mode, status in (("ok", 0), ("exit", 3), ("raise", 1)):
        out = tmp_path / mode
        result = subprocess.run(base + ["--out", "%s=/out" % out, str(script), mode],
                                capture_output=True, text=True, timeout=120, env=runner_env())
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


def test_one_board_list_per_capability():
    """The MicroPython boards are micropython_runner.run.BOARDS: what build_firmware.sh builds
    (--list), what `microtrain micropython --board` and `microtrain fleet --board` take, and
    every Cortex-M board the core runs on (the mps* presets firmware builds for)."""
    import json
    from microtrain.micropython_runner import run as runner
    listed = subprocess.run(["bash", os.path.join(ROOT, "tools", "micropython",
                                                  "build_firmware.sh"), "--list"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert sorted(listed) == sorted(runner.BOARDS)
    with open(os.path.join(ROOT, "CMakePresets.json")) as handle:
        presets = [p["name"] for p in json.load(handle)["configurePresets"]
                   if not p.get("hidden")]
    cortex_m = [name for name in presets if name.startswith(("mps2-", "mps3-"))]
    assert len(cortex_m) == 5 and set(cortex_m) <= set(runner.BOARDS)
    choices = [a.choices for a in command._parser()._actions if a.dest == "board"][0]
    assert sorted(choices) == sorted(runner.BOARDS)
    from microtrain.federated import fleet
    choices = [a.choices for a in fleet._parser()._actions if a.dest == "board"][0]
    assert sorted(choices) == sorted(runner.BOARDS)


def test_a_missing_firmware_is_built_on_first_use(monkeypatch, tmp_path):
    """In the source tree a board's missing default firmware is built before the run (the
    extra boards are not built by the test command); a folder given by the environment is
    never built into."""
    from microtrain.micropython_runner import run as runner
    built = []
    monkeypatch.delenv(runner.ENV_FIRMWARE_DIR, raising=False)
    monkeypatch.setattr(runner, "firmware_path",
                        lambda board, directory=None: str(tmp_path / board / "firmware.elf"))

    def build(boards):
        built.extend(boards)
        for board in boards:
            (tmp_path / board).mkdir()
            (tmp_path / board / "firmware.elf").write_bytes(b"elf")

    monkeypatch.setattr(runner, "build_firmware", build)
    assert runner.ensure_firmware("mps2-an505") == str(tmp_path / "mps2-an505" / "firmware.elf")
    assert runner.ensure_firmware("mps2-an505") == str(tmp_path / "mps2-an505" / "firmware.elf")
    assert built == ["mps2-an505"]  # once
    monkeypatch.setenv(runner.ENV_FIRMWARE_DIR, str(tmp_path / "elsewhere"))
    with pytest.raises(romfs.RunnerError, match="no firmware .*build_firmware.sh mps3-an547"):
        runner.ensure_firmware("mps3-an547")
    assert built == ["mps2-an505"]


def test_offline_the_firmware_build_says_how_to_give_micropythons_source(tmp_path,
                                                                         monkeypatch):
    """Without a tarball and without the network, build_firmware.sh ends on a hint naming
    MICROPYTHON_TARBALL (not on git's "Could not resolve host" alone) and leaves no
    half-made clone; the runner's build turns its status into one RunnerError."""
    tree = tmp_path / "tree"
    (tree / "tools" / "micropython").mkdir(parents=True)
    script = tree / "tools" / "micropython" / "build_firmware.sh"
    with open(os.path.join(ROOT, "tools", "micropython", "build_firmware.sh")) as handle:
        script.write_text(handle.read())
    (tree / "tools" / "micropython" / "boards").mkdir()
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\necho \"fatal: unable to access "
                              "'https://github.com/micropython/micropython.git/': Could not "
                              "resolve host: github.com\" >&2\nexit 128\n")
    (fake / "git").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MICROPYTHON_TARBALL"}
    env.update(PATH="%s:%s" % (fake, os.environ["PATH"]), XDG_CACHE_HOME=str(tmp_path / "c"))
    result = subprocess.run(["bash", str(script), "unix"], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 1
    assert "Could not resolve host" in result.stderr
    hint = result.stderr[result.stderr.index("Could not resolve host"):]
    assert "MICROPYTHON_TARBALL=/path/to/micropython-1.28.0.tar.gz" in hint
    assert not (tree / "build" / "micropython" / "src" / "micropython-1.28.0").exists()
    from microtrain.micropython_runner import run as runner
    monkeypatch.delenv("MICROPYTHON_TARBALL", raising=False)
    for name in ("PATH", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv(runner.ENV_SOURCE_DIR, str(tree))
    with pytest.raises(romfs.RunnerError, match="failed .*status 1.*MICROPYTHON_TARBALL"):
        runner.build_firmware(["unix"])
