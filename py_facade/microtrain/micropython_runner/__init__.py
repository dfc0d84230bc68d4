"""Running a script on microtrain's MicroPython firmware (CPython): the mps2 boards under
QEMU or MicroPython's unix port (``run``), the ROMFS images of the files it reads
(``romfs``) and the program sent to the board (``launcher``).

It imports nothing of microtrain: the ``microtrain micropython`` command
(``microtrain.tools.micropython``) and a federated client on a device
(``microtrain.federated.device``) both run scripts through it.
"""
