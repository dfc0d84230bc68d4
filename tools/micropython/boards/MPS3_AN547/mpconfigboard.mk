# microtrain's MicroPython board for QEMU mps3-an547 (SSE-300, Cortex-M55 with Helium and
# FPv5): ports/qemu's MPS3_AN547 with the core's CPU flags (cmake/toolchains/cortex-m55.cmake:
# the FPU and MVE the -mcpu implies) and the memory of mps3_an547.ld (a 2 MiB heap).
# build_firmware.sh copies this folder into ports/qemu/boards/.
QEMU_ARCH = arm
QEMU_MACHINE = mps3-an547

CFLAGS += -mthumb -mcpu=cortex-m55 -mfloat-abi=hard
# With MVE's half precision GCC's GNU modes report FLT_EVAL_METHOD 16, for which newlib's
# math.h has no double_t (lib/libm_dbl needs it); C11's methods report 0, as float and double
# are evaluated anyway (the arithmetic is the same).
CFLAGS += -fpermitted-flt-eval-methods=c11
CFLAGS += -DQEMU_SOC_MPS3
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M55"'
CFLAGS += -DCPU_FREQ_HZ=32000000

LDSCRIPT = boards/MPS3_AN547/mps3_an547.ld

SRC_BOARD_O = shared/runtime/gchelper_generic.o

MPY_CROSS_FLAGS += -march=armv7emdp

SUPPORTS_HARDWARE_FP_DOUBLE = 1
