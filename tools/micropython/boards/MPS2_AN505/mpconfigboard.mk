# microtrain's MicroPython board for QEMU mps2-an505 (Cortex-M33 with FPv5-SP, secure state).
# The core boots secure: code, data and heap live in SSRAM1's secure alias (0x10000000, 4 MiB:
# mps2_an505.ld) and the UART is the CMSDK UART0's secure alias (0x50200000: uart_an505.c),
# so no QEMU_SOC_* is defined and ports/qemu's uart.c compiles to nothing.
# build_firmware.sh copies this folder into ports/qemu/boards/.
QEMU_ARCH = arm
QEMU_MACHINE = mps2-an505

CFLAGS += -mthumb -mcpu=cortex-m33 -mfloat-abi=hard -mfpu=fpv5-sp-d16
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M33"'

LDSCRIPT = boards/MPS2_AN505/mps2_an505.ld

# gchelper_thumb2.s is assembled for ARMv7-M, which the ARMv8-M objects do not link with
SRC_BOARD_O = shared/runtime/gchelper_generic.o boards/MPS2_AN505/uart_an505.o

MPY_CROSS_FLAGS += -march=armv7emsp

SUPPORTS_HARDWARE_FP_SINGLE = 1
