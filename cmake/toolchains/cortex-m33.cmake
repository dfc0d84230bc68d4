# Cortex-M33 (ARMv8-M mainline) with the single-precision FPv5 unit, hard-float ABI.
# Use: cmake --toolchain cmake/toolchains/cortex-m33.cmake (or a preset in CMakePresets.json).
set(MT_CPU_FLAGS -mcpu=cortex-m33 -mthumb -mfpu=fpv5-sp-d16 -mfloat-abi=hard)
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
