"""The one ABI description (micro_core/abi/microtrain_abi.json) and what tools/gen_abi.py
writes from it: the generated files are what it writes today, its layout arithmetic is the
compiler's (ctypes on this host), and the build check it writes, micro_core/src/abi_layout.h,
fails on a description that disagrees with the header."""

import ctypes
import json
import os
import shutil
import subprocess
import sys

import pytest

from microtrain.backend import _native_types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR = os.path.join(ROOT, "tools", "gen_abi.py")
sys.path.insert(0, os.path.dirname(GENERATOR))
import gen_abi  # noqa: E402


def test_generated_files_are_what_the_description_gives():
    result = subprocess.run([sys.executable, GENERATOR, "--check"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_generator_lays_structs_out_as_the_c_compiler_does():
    """LP64 offsets and sizes from gen_abi.layout() are ctypes' (the C compiler's) here."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        pytest.skip("the LP64 layout is compared on a 64-bit host; this one is %d-bit"
                    % (8 * ctypes.sizeof(ctypes.c_void_p)))
    abi = gen_abi.load()
    for struct in abi["structs"]:
        mirror = getattr(_native_types, struct["name"])
        placed, size = gen_abi.layout(struct, "lp64")
        assert size == ctypes.sizeof(mirror), struct["name"]
        for field, offset, _ in placed:
            assert getattr(mirror, field["name"]).offset == offset, (struct["name"], field["name"])
        assert _native_types.STRUCT_MIRRORS[struct["which"]] is mirror


def _compile_check(tmp_path, description, compiler=None):
    """The C compiler's verdict on abi_layout.h written from `description` (a dict)."""
    tmp_path.mkdir()
    path = tmp_path / "abi.json"
    path.write_text(json.dumps(description))
    out = tmp_path / "out"
    subprocess.run([sys.executable, GENERATOR, "--description", str(path), "--out", str(out)],
                   check=True, capture_output=True, timeout=60)
    source = tmp_path / "check.c"
    source.write_text('#include "abi_layout.h"\nint mt_abi_check_compiled;\n')
    # the compiler without a sanitizer runtime tools/run_sanitizers.sh preloads into Python
    environment = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([compiler or shutil.which("cc") or shutil.which("gcc"), "-std=c99", "-c", str(source),
                           "-o", str(tmp_path / "check.o"),
                           "-I", str(out / "micro_core" / "src"),
                           "-I", os.path.join(ROOT, "micro_core", "include")],
                          capture_output=True, text=True, timeout=120, env=environment)


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")),
                    reason="no C compiler to compile micro_core/src/abi_layout.h with")
def test_a_description_that_disagrees_with_the_header_fails_the_build(tmp_path):
    abi = gen_abi.load()
    assert _compile_check(tmp_path / "as_is", abi).returncode == 0

    def drifted(change):
        copy = json.loads(json.dumps(abi))
        change(copy)
        result = _compile_check(tmp_path / str(len(os.listdir(tmp_path))), copy)
        assert result.returncode != 0
        return result.stderr

    def plan(copy):
        return next(s for s in copy["structs"] if s["name"] == "mt_memory_plan")["fields"]

    def swap_two_fields(copy):
        fields = plan(copy)
        fields[1], fields[2] = fields[2], fields[1]

    assert "mt_abi_check_mt_memory_plan_metadata_bytes" in drifted(swap_two_fields)

    def narrow_a_field(copy):
        plan(copy)[0]["type"] = "int32_t"

    assert "mt_abi_check_mt_memory_plan" in drifted(narrow_a_field)

    def drop_a_field(copy):
        fields = plan(copy)
        fields[:] = [field for field in fields if field["name"] != "metadata_bytes"]

    assert "mt_abi_check_mt_memory_plan_weight_bytes" in drifted(drop_a_field)

    def renumber_a_status(copy):
        copy["enums"][0]["values"][-1][1] = -11

    assert "mt_abi_check_MT_ERR_IO" in drifted(renumber_a_status)

    def change_a_constant(copy):  # a macro in the header: checked by its name, not its value
        next(c for c in copy["constants"] if c["name"] == "MT_MAX_OPS")["value"] += 1

    assert "mt_abi_check_MT_MAX_OPS" in drifted(change_a_constant)

    def retype_a_callback(copy):
        copy["callbacks"][0]["params"][2] = "uint32_t"

    assert "mt_abi_check_mt_write_fn" in drifted(retype_a_callback)

    def bump_the_version(copy):
        copy["abi_version"] += 1

    assert "mt_abi_check_version" in drifted(bump_the_version)


@pytest.mark.skipif(not shutil.which("arm-linux-gnueabihf-gcc"),
                    reason="no 32-bit ARM compiler (tools/setup_arm.sh installs it)")
def test_a_field_missing_in_one_models_padding_fails_the_other_models_build(tmp_path):
    """mt_memory_plan's last field, seal, ends in LP64's tail padding (148 of 152 bytes): a
    description without it lays out the same on x86-64, and fails an ILP32 build (92 bytes),
    which every test run makes (ARM Linux, wasm32, the firmware)."""
    abi = gen_abi.load()
    del next(s for s in abi["structs"] if s["name"] == "mt_memory_plan")["fields"][-1]
    result = _compile_check(tmp_path / "ilp32", abi, shutil.which("arm-linux-gnueabihf-gcc"))
    assert result.returncode != 0 and "mt_abi_check_mt_memory_plan" in result.stderr
