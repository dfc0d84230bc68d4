# Cortex-M4F (ARMv7E-M) with the single-precision FPv4 unit, hard-float ABI.
# Use: cmake --toolchain cmake/toolchains/cortex-m4f.cmake (or a preset in CMakePresets.json).
set(MT_CPU_FLAGS -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard)
set(MT_TOOLCHAIN_CORE cortex-m4f)  # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
