# USER_C_MODULES entry for MicroPython's CMake-based ports: microtrain's native backend.
include(${CMAKE_CURRENT_LIST_DIR}/_microtrain/micropython.cmake)
