"""A fault planted in the Helium assembly fails the Cortex-M55's sibling test.

tests/boards/mutate_asm.py holds the planted faults of the hand-written assembly (Helium's
naked kernels and flag tests, the FPU cores' blocks) and runs each on a copy of the tree: its
whole run takes longer than the test command may (python tests/boards/mutate_asm.py, every
fault; CONTRIBUTING.md). Here one representative runs: every Helium kernel's subnormal-result
test (FPSCR.UFC) dropped, which the sibling cases' subnormal data must catch; and every fault's
snippet must still be found once in its file, so a kernel that changed under a fault is noticed
here and not only by the next full run.
"""

import os

import mutate_asm


def test_every_fault_still_finds_its_snippet():
    assert len(mutate_asm.FAULTS) >= 40
    for fault in mutate_asm.FAULTS:
        with open(os.path.join(mutate_asm.REPO_ROOT, fault.path)) as handle:
            assert handle.read().count(fault.snippet) == 1, fault.name


def test_a_helium_fault_fails_the_sibling_firmware():
    [(fault, outcome)] = mutate_asm.run_faults([f for f in mutate_asm.FAULTS if f.name == "flags-ufc"])
    assert outcome.startswith("caught"), outcome
