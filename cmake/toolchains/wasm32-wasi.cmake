# WebAssembly (wasm32) with Debian's clang-14, wasm-ld-14 and wasi-libc: the core as one
# module, build/presets/wasm32-wasi/micro_core/microtrain.wasm, with no imports. It exports
# its memory, __heap_base and every mt_* function; like a firmware, the host (JavaScript)
# places the model image and the arena in linear memory itself. Same numerics flags as every
# target (-ffp-contract=off, no fast-math; wasm has no FMA contraction and rounds f32 ops to
# nearest, so the bits equal the host's; the layer sums' explicit fused multiply-adds are
# wasi-libc's fmaf, musl's, which is correctly rounded: micro_core/src/mt_fma.h).
# Use: cmake --preset wasm32-wasi (apt-get install clang-14 lld-14 wasi-libc).
set(CMAKE_SYSTEM_NAME Generic)   # no OS: static core, no shared library, no C tests
set(CMAKE_SYSTEM_PROCESSOR wasm32)

find_program(MT_WASM_CLANG NAMES clang-14 clang REQUIRED)
set(CMAKE_C_COMPILER ${MT_WASM_CLANG})
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(MT_WASI_SYSROOT /usr CACHE PATH "wasi-libc sysroot (Debian: headers in include/wasm32-wasi)")
set(CMAKE_C_FLAGS_INIT "--sysroot=${MT_WASI_SYSROOT} -isystem ${MT_WASI_SYSROOT}/include/wasm32-wasi")
# clang's wasm driver runs wasm-ld; Debian names it wasm-ld-14.
find_program(MT_WASM_LD NAMES wasm-ld-14 wasm-ld REQUIRED)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=${MT_WASM_LD} -L${MT_WASI_SYSROOT}/lib/wasm32-wasi")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
