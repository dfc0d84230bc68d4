# Common part of the bare-metal GCC toolchain files (arm-none-eabi.cmake, riscv32-elf.cmake):
# they set MT_GCC_PREFIX (the tools' name before gcc, ar, ...), MT_GCC_PROCESSOR and
# MT_LIBC_C_FLAGS (what their C library needs on the compile line), and their CPU files set
# MT_CPU_FLAGS. No operating system: CMAKE_SYSTEM_NAME Generic, static libraries only.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR ${MT_GCC_PROCESSOR})

set(CMAKE_C_COMPILER ${MT_GCC_PREFIX}gcc)
set(CMAKE_ASM_COMPILER ${MT_GCC_PREFIX}gcc)
set(CMAKE_AR ${MT_GCC_PREFIX}ar)
set(CMAKE_RANLIB ${MT_GCC_PREFIX}ranlib)
set(CMAKE_SIZE ${MT_GCC_PREFIX}size CACHE FILEPATH "${MT_GCC_PREFIX}size, for the size table")

# try_compile cannot link a program without startup code and a linker script.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# The CPU flags go on every compile and link line, so libgcc and the C library come in the
# matching multilib. Each function and object in its own section lets the linker drop what a
# firmware does not call.
string(REPLACE ";" " " _mt_cpu_flags "${MT_CPU_FLAGS}")
string(REPLACE ";" " " _mt_libc_flags "${MT_LIBC_C_FLAGS}")
string(STRIP "${_mt_cpu_flags} ${_mt_libc_flags}" _mt_c_flags)
set(CMAKE_C_FLAGS_INIT "${_mt_c_flags} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_mt_cpu_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_mt_cpu_flags} -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
