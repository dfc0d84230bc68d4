# find_package(microtrain): the static core, microtrain::microtrain_core (one header to
# include, microtrain.h). Installed by `cmake --install` of a microtrain build.
include(${CMAKE_CURRENT_LIST_DIR}/microtrainTargets.cmake)
