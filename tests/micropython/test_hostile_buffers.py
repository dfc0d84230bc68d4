"""The native module's lent buffers under a script that changes them (issue 45, items 13-14),
on the unix port and both QEMU boards, each run in its own process under a 4 GiB
address-space cap (tests/hostile_process.py; the runner and its QEMU or unix child).

* An image given as a writable buffer is the session's own copy from open(): growing the
  bytearray (which moves it) or changing its bytes afterwards changes nothing (the steps
  read freed heap, and 990 of 992 mutated steps trained on the changed bytes, before).
* The caller's arena is checked on every call against the address and length open() saw:
  grown or shrunk, the next call raises MicrotrainError MT_ERR_STATE naming the arena and
  the session is closed (steps wrote into freed heap, read_rows returned nothing, before).
* An arena over the image is refused before open() writes anything (it overwrote the image).
* Values past 32 bits are printed whole (first_row 2**40 was "first_row 0"), and ints past
  64 bits are never cut to their low bits.
"""

import os
import re
import sys

import pytest

from mp_setup import BOARDS, SCRIPTS, runner_env

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hostile_process import PEAK_LIMIT, python, run_capped  # noqa: E402
from small_models import saved_classifier  # noqa: E402

STATE = "call not valid in the session's current state [MT_ERR_STATE]: "
MOVED = STATE + "the arena buffer changed after open()"
BAD = "bad argument [MT_ERR_BAD_ARGUMENT]: "
EXPECTED_CASES = {
    "a step after the arena grew": "-4 mt_session_train_step: " + MOVED,
    "the call after that": "-4 mt_session_train_step: " + STATE + "no session: call open() "
                           "first",
    "read_rows after the arena grew": "-4 read_rows: " + MOVED,
    "write_rows after the arena shrank": "-4 write_rows: " + MOVED,
    "a checkpoint write that grows the arena": "-4 mt_checkpoint_save: " + MOVED,
    "an export write that grows the arena": "-4 mt_session_export_image: " + MOVED,
    "a checkpoint read that grows the arena": "-4 mt_checkpoint_load: " + MOVED,
    "rows from a generator that grows the arena": "-4 write_rows: " + MOVED,
    "an arena over the image": "-1 open: " + BAD + "the arena",
    "first_row 2**40": "-1 write_rows: " + BAD + "first_row 1099511627776 is outside 0..3",
    "kind 2**40": "-1 write_rows: " + BAD + "kind 1099511627776 is neither",
    "position 2**32": "-1 write_rows: " + BAD + "position 4294967296 does not fit in 32 bits",
    "n 2**40": "-1 mt_session_train_step: " + BAD + "n = 1099511627776 rows, a step takes 1 "
               "to 4",
    "n 2**64 + 4": "-1 mt_session_train_step: " + BAD + "n = 18446744073709551620 rows",
    "infer n -2**40": "-1 mt_session_infer: " + BAD + "n = -1099511627776 rows",
    "read_rows n 2**40": "-1 read_rows: " + BAD + "n = 1099511627776 rows, the batch size is 4",
    "weight 2**32": "-1 mt_session_param: " + BAD + "position 4294967296 does not fit in 32 "
                    "bits",
    "epoch 2**70": "-1 mt_session_set_epoch: " + BAD + "epoch 1180591620717411303424 does "
                   "not fit in 64 bits",
    "checkpoint size -1": "-1 mt_checkpoint_load: " + BAD + "size -1",
    "n a float": "-1 mt_session_train_step: " + BAD + "n must be an integer, not float",
    "label 2**64 + 1": "-1 write_rows: " + BAD + "value 1 (18446744073709551617) does not fit "
                       "in an int32 label",
}
FACTS = ("an image bytearray grown after open() trains as before",
         "an image bytearray changed after open() trains as before",
         "an arena left alone trains as before", "image bytes intact after the refused open",
         "an arena beside the image trains as before", "still trains after all that")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lent")
    return saved_classifier(folder / "tiny.mtm", 4, seed=1)


@pytest.mark.parametrize("board", BOARDS)
def test_buffers_changed_behind_the_modules_back_are_caught(board, micropython_firmware, tiny):
    outcome = run_capped(python("-m", "microtrain.tools.micropython", "--board", board,
                                "--timeout", "300", "--data", "%s=/data/tiny.mtm" % tiny,
                                os.path.join(SCRIPTS, "backend_lent_buffers.py"),
                                "/data/tiny.mtm"),
                         timeout=400, env=runner_env())
    assert outcome.status == 0, outcome
    assert outcome.peak_bytes < PEAK_LIMIT, outcome
    output = outcome.stdout
    cases = dict(re.findall(r"^case (.+?): (.*)$", output, re.MULTILINE))
    for name, start in EXPECTED_CASES.items():
        assert cases.get(name, "").startswith(start), (name, cases.get(name), output)
    facts = dict(re.findall(r"^fact (.+?): (.*)$", output, re.MULTILINE))
    for name in FACTS:
        assert facts.get(name) == "True", (name, facts.get(name), output)
    assert output.rstrip().endswith("survived"), output
