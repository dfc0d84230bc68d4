# Cortex-M33 (ARMv8-M mainline) with the single-precision FPv5 unit, hard-float ABI.
# Use: cmake --toolchain cmake/toolchains/cortex-m33.cmake (or a preset in CMakePresets.json).
set(MT_CPU_FLAGS -mcpu=cortex-m33 -mthumb -mfpu=fpv5-sp-d16 -mfloat-abi=hard)
set(MT_TOOLCHAIN_CORE cortex-m33)  # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
