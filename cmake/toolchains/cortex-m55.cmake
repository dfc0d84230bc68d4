# Cortex-M55 (ARMv8.1-M mainline) with Helium (MVE, integer and single-precision float) and the
# FPv5 double-precision unit, hard-float ABI.
# Use: cmake --toolchain cmake/toolchains/cortex-m55.cmake (or a preset in CMakePresets.json).
set(MT_CPU_FLAGS -mcpu=cortex-m55 -mthumb -mfloat-abi=hard)
set(MT_TOOLCHAIN_CORE cortex-m55)  # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
