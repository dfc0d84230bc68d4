# ctest in CMake's script mode (cmake -DOPS=... -DOUT=... -P check_ops_selection.cmake):
# what micro_core/cmake/microtrain_ops.cmake selects for the op list OPS. Prints the sources
# and the generated header; tests/core/CMakeLists.txt matches them (and, for an unknown
# name, the FATAL_ERROR that lists the valid ones).
cmake_minimum_required(VERSION 3.18)
include(${CMAKE_CURRENT_LIST_DIR}/../../micro_core/cmake/microtrain_ops.cmake)
mt_ops_sources(sources "${OPS}" "${OUT}")
foreach(source IN LISTS sources)
  file(RELATIVE_PATH relative "${MT_OPS_SOURCE_DIR}" "${source}")
  message("source ${relative}")
endforeach()
file(READ "${OUT}/mt_ops_config.h" header)
message("${header}")
