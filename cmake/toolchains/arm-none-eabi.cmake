# Common part of the bare-metal Cortex-M toolchain files (cortex-m*.cmake set MT_CPU_FLAGS and
# include this file). Debian's gcc-arm-none-eabi + libnewlib-arm-none-eabi: see
# tools/setup_arm.sh. The CPU flags pick the multilib of libgcc and newlib (thumb, soft or
# hard float ABI); newlib needs nothing more on the compile line.
set(MT_GCC_PREFIX arm-none-eabi-)
set(MT_GCC_PROCESSOR arm)
set(MT_LIBC_C_FLAGS "")
include(${CMAKE_CURRENT_LIST_DIR}/bare-metal-gcc.cmake)
