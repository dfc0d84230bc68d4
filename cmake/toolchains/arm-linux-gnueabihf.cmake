# 32-bit ARM Linux (ARMv7-A, VFPv3-D16, hard-float ABI) with Debian's arm-linux-gnueabihf cross compiler.
# Test programs run under qemu-arm (user mode; there is no binfmt here, so ctest calls it
# through CMAKE_CROSSCOMPILING_EMULATOR with the target's libraries from /usr/arm-linux-gnueabihf).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm -L /usr/arm-linux-gnueabihf)

set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
