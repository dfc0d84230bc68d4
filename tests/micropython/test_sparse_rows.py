"""A float layer a sparse update trains the first rows of, through the native backend
`_microtrain`: the arena holds those rows alone and the others are read from the image
(mt_param_info.held), so get_weights(), weights(), weights_crc32() and set_weights() join and
split the two parts. scripts/int8_in_place_weights.py on mp_setup.write_sparse_rows' model
(x [64] -> Dense 16 relu -> Dense 5 -> Softmax, 2 of the first Dense's 16 rows and the head
trained) prints line for line what the ctypes backend prints: weights before and after
steps, a set_weights round trip that gives the first step again, and weights written (the
frozen rows into the image: the firmware's image is read-only bytes, so it copies the image
first and moves the session onto it, a checkpoint carrying the state across) then stepped.
The wasm backend runs the same script: tests/test_micropython_wasm.py.
"""

from mp_setup import INT8_SCRIPT, run_micropython, sparse_rows_transcript, write_sparse_rows


def test_sparse_rows_weights_match_the_ctypes_backend(firmware_of, tmp_path):
    path = write_sparse_rows(tmp_path)
    firmware_of("unix")
    status, output, errors = run_micropython("unix", INT8_SCRIPT, [(path, "/data/sparse_rows.mtm")],
                                             "/data/sparse_rows.mtm")
    assert status == 0, errors[-3000:]
    assert output.splitlines() == sparse_rows_transcript(path).splitlines()
