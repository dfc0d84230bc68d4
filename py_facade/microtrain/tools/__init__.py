"""Host tools (CPython): the ``microtrain`` command (``cli``), firmware packaging and QEMU runs
(``firmware``), and the arena plan by buffer (``arena``, ``arena_plot``). They sit on top of the
runtime; nothing in the runtime imports them."""
