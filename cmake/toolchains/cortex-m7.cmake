# Cortex-M7 (ARMv7E-M) with the double-precision FPv5 unit, hard-float ABI.
# Use: cmake --toolchain cmake/toolchains/cortex-m7.cmake (or a preset in CMakePresets.json).
set(MT_CPU_FLAGS -mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard)
set(MT_TOOLCHAIN_CORE cortex-m7)   # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
