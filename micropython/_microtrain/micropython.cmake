# _microtrain for MicroPython's CMake-based ports (rp2, esp32, ...):
#   make USER_C_MODULES=<microtrain>/micropython/micropython.cmake
# The same module and core as micropython.mk (the make-based ports): the module's sources
# (modmicrotrain.c says which holds what) and every source of micro_core/src and its folders:
# the ops and every kernel family in ops/<family>/ and optimizers/ (each empty off its target).
get_filename_component(MICROTRAIN_ROOT ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)
file(GLOB MICROTRAIN_CORE_SOURCES CONFIGURE_DEPENDS
    ${MICROTRAIN_ROOT}/micro_core/src/*.c
    ${MICROTRAIN_ROOT}/micro_core/src/*/*.c
    ${MICROTRAIN_ROOT}/micro_core/src/ops/*/*.c)

add_library(usermod_microtrain INTERFACE)
target_sources(usermod_microtrain INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/modmicrotrain.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_open.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_buffers.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_steps.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_weights.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_checkpoints.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_values.c
    ${CMAKE_CURRENT_LIST_DIR}/backend_errors.c
    ${MICROTRAIN_CORE_SOURCES})
# micro_core/src too: the core's own sources include "ops/ops.h", "session.h", ..., and
# MicroPython preprocesses every user-module source with these directories for its qstrs.
target_include_directories(usermod_microtrain INTERFACE
    ${MICROTRAIN_ROOT}/micro_core/include
    ${MICROTRAIN_ROOT}/micro_core/src)
# The core's numerics: no FMA contraction, no fast-math, for every source of the firmware
# (MicroPython's float parsing included, as with micropython.mk).
target_compile_options(usermod_microtrain INTERFACE -ffp-contract=off -fno-fast-math)
# sqrtf as the FPU instruction where there is one, as micro_core/CMakeLists.txt compiles it.
set_source_files_properties(${MICROTRAIN_CORE_SOURCES} PROPERTIES COMPILE_OPTIONS -fno-math-errno)

target_link_libraries(usermod INTERFACE usermod_microtrain)
