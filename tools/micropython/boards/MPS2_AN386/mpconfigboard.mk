# microtrain's MicroPython board for QEMU mps2-an386 (Cortex-M4F): ports/qemu's MPS2_AN385
# with the M4's single-precision FPU. build_firmware.sh copies this folder into ports/qemu/boards/.
QEMU_ARCH = arm
QEMU_MACHINE = mps2-an386

CFLAGS += -mthumb -mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16
CFLAGS += -DQEMU_SOC_MPS2
CFLAGS += -DMICROPY_HW_MCU_NAME='"Cortex-M4F"'

LDSCRIPT = mcu/arm/mps2.ld

SRC_BOARD_O = shared/runtime/gchelper_native.o shared/runtime/gchelper_thumb2.o

MPY_CROSS_FLAGS += -march=armv7emsp

SUPPORTS_HARDWARE_FP_SINGLE = 1
