# 32-bit ARM Linux (ARMv7-A, VFPv3-D16, hard-float ABI), run under qemu-arm.
set(MT_LINUX_TRIPLE arm-linux-gnueabihf)
set(MT_LINUX_PROCESSOR arm)
set(MT_LINUX_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
