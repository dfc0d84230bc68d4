# Cortex-M3 (ARMv7-M), no FPU: every float operation is a libgcc call.
# Use: cmake --toolchain cmake/toolchains/cortex-m3.cmake (or a preset in CMakePresets.json).
set(MT_CPU_FLAGS -mcpu=cortex-m3 -mthumb -mfloat-abi=soft)
set(MT_TOOLCHAIN_CORE cortex-m3)   # the MT_BOARD_CORE of the boards it builds for
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
