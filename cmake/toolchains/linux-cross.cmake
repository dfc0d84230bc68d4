# Common part of the ARM Linux toolchain files: Debian's ${MT_LINUX_TRIPLE}-gcc cross compiler.
# Test programs run under ${MT_LINUX_QEMU} (user mode; there is no binfmt here, so ctest calls
# it through CMAKE_CROSSCOMPILING_EMULATOR with the target's libraries from /usr/<triple>).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${MT_LINUX_PROCESSOR})

set(CMAKE_C_COMPILER ${MT_LINUX_TRIPLE}-gcc)
set(CMAKE_CROSSCOMPILING_EMULATOR ${MT_LINUX_QEMU} -L /usr/${MT_LINUX_TRIPLE})

set(CMAKE_FIND_ROOT_PATH /usr/${MT_LINUX_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
