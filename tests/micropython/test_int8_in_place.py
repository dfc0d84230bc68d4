"""The weights of int8 layers trained in place (convert(..., int8_train=True)) through the
native backend `_microtrain`: get_weights() lists the float32 weights, int8 weights and int32
biases in tensor-table order with their dtypes, set_weights() writes them (an int8 weight's
float master copy restarting from it), a value outside an integer weight's type is refused
naming the weight and changes nothing, weights() and weights_crc32() cover them all: line
for line what the ctypes backend prints (scripts/int8_in_place_weights.py), before and
after steps. The wasm backend runs the same script: tests/test_micropython_wasm.py.

The models (mp_setup.write_int8_in_place): as converted (every int8 weight before the float
head's), and with the head's weight moved to the front of the tensor table, so that a
backend listing either of the core's two weight lists first prints other dtypes.
"""

import pytest

from mp_setup import (BOARDS, INT8_SCRIPT, int8_in_place_transcript, run_micropython,
                      write_int8_in_place)


@pytest.fixture(scope="module")
def int8_models(tmp_path_factory):
    return write_int8_in_place(tmp_path_factory.mktemp("int8_in_place"))


@pytest.mark.parametrize("board", BOARDS)
def test_int8_in_place_weights_match_the_ctypes_backend(board, firmware_of, int8_models):
    firmware_of(board)
    status, output, errors = run_micropython(board, INT8_SCRIPT, int8_models["files"],
                                             *int8_models["guests"])
    assert status == 0, errors[-3000:]
    assert output.splitlines() == int8_in_place_transcript(int8_models).splitlines()
