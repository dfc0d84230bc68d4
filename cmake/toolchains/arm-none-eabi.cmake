# Common part of the bare-metal Cortex-M toolchain files (cortex-m*.cmake set MT_CPU_FLAGS and
# include this file). Debian's gcc-arm-none-eabi + libnewlib-arm-none-eabi: see
# tools/setup_arm.sh. No operating system: CMAKE_SYSTEM_NAME Generic, static libraries only.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_AR arm-none-eabi-ar)
set(CMAKE_RANLIB arm-none-eabi-ranlib)
set(CMAKE_SIZE arm-none-eabi-size CACHE FILEPATH "arm-none-eabi-size, for the size table")

# try_compile cannot link a program without startup code and a linker script.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# The CPU flags go on every compile and link line, so libgcc and newlib come in the matching
# multilib (thumb, soft or hard float ABI). Each function and object in its own section lets
# the linker drop what a firmware does not call.
string(REPLACE ";" " " _mt_cpu_flags "${MT_CPU_FLAGS}")
set(CMAKE_C_FLAGS_INIT "${_mt_cpu_flags} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_mt_cpu_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_mt_cpu_flags} -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
