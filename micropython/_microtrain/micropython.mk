# _microtrain for MicroPython's make-based ports (unix, qemu, stm32, ...):
#   make USER_C_MODULES=<microtrain>/micropython ...
# The native module and the whole C core (micro_core/src with its folders: every op, and every
# kernel family in ops/<family>/ and optimizers/, each empty where its target is not; by
# wildcard so that a new core file or family needs no edit here) are compiled
# into the firmware. Without MT_OPS_CONFIG the op registry has every op of microtrain_ops.def.
MICROTRAIN_MOD_DIR := $(USERMOD_DIR)
MICROTRAIN_ROOT := $(abspath $(MICROTRAIN_MOD_DIR)/../..)
MICROTRAIN_CORE_C := $(wildcard $(MICROTRAIN_ROOT)/micro_core/src/*.c) \
                     $(wildcard $(MICROTRAIN_ROOT)/micro_core/src/*/*.c) \
                     $(wildcard $(MICROTRAIN_ROOT)/micro_core/src/ops/*/*.c)

# The module's own sources, one per responsibility (modmicrotrain.c says which holds what):
# compiled and scanned for qstrs.
MICROTRAIN_MOD_C := modmicrotrain.c backend_open.c backend_buffers.c backend_steps.c \
                    backend_weights.c backend_checkpoints.c backend_values.c backend_errors.c
SRC_USERMOD_C += $(addprefix $(MICROTRAIN_MOD_DIR)/, $(MICROTRAIN_MOD_C))
# Library sources: compiled and linked, not scanned for qstrs.
SRC_USERMOD_LIB_C += $(MICROTRAIN_CORE_C)

# The core's numerics (micro_core/CMakeLists.txt, MT_CORE_C_FLAGS): no FMA contraction, no
# fast-math. These go into every object of the firmware, MicroPython's own float parsing and
# printing included, so that `0.002` in a script is the same double as on the host.
CFLAGS_USERMOD += -I$(MICROTRAIN_ROOT)/micro_core/include -ffp-contract=off -fno-fast-math

# The core's own objects: its private headers, C99 as CMake builds it, -fno-math-errno so
# that sqrtf is the FPU instruction where there is one, and no auto-vectorization (GCC would
# vectorize float loops into Helium code that flushes subnormals: micro_core/CMakeLists.txt).
# Paths as py.mk forms them.
MICROTRAIN_CORE_O := $(addprefix $(BUILD)/, $(MICROTRAIN_CORE_C:.c=.o))
$(MICROTRAIN_CORE_O): CFLAGS += -I$(MICROTRAIN_ROOT)/micro_core/src -std=c99 -fno-math-errno -fno-tree-vectorize

# A port with double-precision Python floats and no FPU (ports/qemu MPS2_AN385 built with
# MICROPY_FLOAT_IMPL=double) links lib/libm_dbl, which has no sqrtf: take MicroPython's
# correctly rounded single-precision one (the core calls sqrtf once per Adam update).
ifeq ($(MICROPY_FLOAT_IMPL)$(SUPPORTS_HARDWARE_FP_SINGLE)$(SUPPORTS_HARDWARE_FP_DOUBLE),double)
SRC_USERMOD_LIB_C += lib/libm/ef_sqrt.c
endif
