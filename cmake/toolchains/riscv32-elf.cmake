# Common part of the bare-metal 32-bit RISC-V toolchain files (rv32*.cmake set MT_CPU_FLAGS and
# include this file). Debian's gcc-riscv64-unknown-elf (multilibs rv32imac/ilp32 and
# rv32imafc/ilp32f among others) with picolibc-riscv64-unknown-elf as the C library: see
# tools/setup_riscv.sh. No operating system: CMAKE_SYSTEM_NAME Generic, static libraries only.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)

set(CMAKE_C_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_ASM_COMPILER riscv64-unknown-elf-gcc)
set(CMAKE_AR riscv64-unknown-elf-ar)
set(CMAKE_RANLIB riscv64-unknown-elf-ranlib)
set(CMAKE_SIZE riscv64-unknown-elf-size CACHE FILEPATH "riscv64-unknown-elf-size, for the size table")

# try_compile cannot link a program without startup code and a linker script.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# The CPU flags go on every compile and link line, so libgcc and picolibc come in the matching
# multilib (rv32imac/ilp32, rv32imafc/ilp32f). picolibc's specs, in the C flags (which CMake
# also passes when it links through the compiler; given twice, GCC refuses the specs), give
# its headers to the compiler and its libc and libm to the linker: Debian's
# riscv64-unknown-elf-gcc has no C library of its own. --picolibc-buildtype=release takes
# picolibc's speed-optimized build (Debian ships it beside the size-optimized default): the
# default's memset and memcpy move a byte per 4-instruction loop, which took 30K of the digits
# step's 237K instructions on rv32imafc (release: 2.9K) and 157K of boot, plan and init. A
# board's link options name its own linker script (-T), which keeps picolibc.ld out, and its
# own startup code (-nostartfiles). Each function and object in its own section lets the
# linker drop what a firmware does not call.
string(REPLACE ";" " " _mt_cpu_flags "${MT_CPU_FLAGS}")
set(CMAKE_C_FLAGS_INIT "${_mt_cpu_flags} --specs=picolibc.specs --picolibc-buildtype=release -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_mt_cpu_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_mt_cpu_flags} -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
