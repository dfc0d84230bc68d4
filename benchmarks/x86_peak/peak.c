/*
 * This core's arithmetic peaks beside microtrain's Dense kernels (benchmarks/x86_peak.py
 * builds and runs it): multiply-accumulates a second on one core with a multiply and an add
 * per term (the reference's arithmetic, which every microtrain kernel keeps) and with fused
 * multiply-adds (what a BLAS such as ONNX Runtime's uses), at the widest vector this CPU has,
 * and the Dense forward and weight gradient of MLP 784-128-10 (batch 32) through the kernels
 * the library selects. Prints one line of key=value pairs.
 *
 * The peak loops are independent chains in registers (16 for AVX-512, 8 or 12 for AVX2), so
 * only the floating-point ports' throughput limits them.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "microtrain.h"
#include "ops/kernel.h"
#include "select/kernels.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define CHAIN512(a, s, t) "vmulps %%zmm30, %%zmm" #s ", %%zmm" #t "\n\tvaddps %%zmm" #t ", %%zmm" #a ", %%zmm" #a "\n\t"
#define FMA512(a, s) "vfmadd231ps %%zmm30, %%zmm" #s ", %%zmm" #a "\n\t"

/* 16 sums, a multiply and an add each per turn: 256 MACs a turn */
__attribute__((target("avx512f"), noinline)) static void muladd512(long turns)
{
    __asm__ volatile("1:\n\t" CHAIN512(0, 24, 16) CHAIN512(1, 25, 17) CHAIN512(2, 26, 18) CHAIN512(3, 27, 19)
                         CHAIN512(4, 28, 20) CHAIN512(5, 29, 21) CHAIN512(6, 24, 22) CHAIN512(7, 25, 23)
                             CHAIN512(8, 26, 16) CHAIN512(9, 27, 17) CHAIN512(10, 28, 18) CHAIN512(11, 29, 19)
                                 CHAIN512(12, 24, 20) CHAIN512(13, 25, 21) CHAIN512(14, 26, 22)
                                     CHAIN512(15, 27, 23) "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(turns)
                     :
                     : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",
                       "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30");
}

/* 16 sums, a fused multiply-add each per turn: 256 MACs a turn */
__attribute__((target("avx512f,fma"), noinline)) static void fma512(long turns)
{
    __asm__ volatile("1:\n\t" FMA512(0, 24) FMA512(1, 25) FMA512(2, 26) FMA512(3, 27) FMA512(4, 28) FMA512(5, 29)
                         FMA512(6, 24) FMA512(7, 25) FMA512(8, 26) FMA512(9, 27) FMA512(10, 28) FMA512(11, 29)
                             FMA512(12, 24) FMA512(13, 25) FMA512(14, 26) FMA512(15, 27) "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(turns)
                     :
                     : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28",
                       "xmm29", "xmm30");
}

#define CHAIN256(a, s, t) "vmulps %%ymm15, %%ymm" #s ", %%ymm" #t "\n\tvaddps %%ymm" #t ", %%ymm" #a ", %%ymm" #a "\n\t"
#define FMA256(a, s) "vfmadd231ps %%ymm15, %%ymm" #s ", %%ymm" #a "\n\t"

/* 8 sums of 8 lanes, a multiply and an add each per turn: 64 MACs a turn */
__attribute__((target("avx2"), noinline)) static void muladd256(long turns)
{
    __asm__ volatile("1:\n\t" CHAIN256(0, 12, 8) CHAIN256(1, 13, 9) CHAIN256(2, 14, 10) CHAIN256(3, 12, 11)
                         CHAIN256(4, 13, 8) CHAIN256(5, 14, 9) CHAIN256(6, 12, 10)
                             CHAIN256(7, 13, 11) "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(turns)
                     :
                     : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

/* 12 sums of 8 lanes, a fused multiply-add each per turn: 96 MACs a turn */
__attribute__((target("avx2,fma"), noinline)) static void fma256(long turns)
{
    __asm__ volatile("1:\n\t" FMA256(0, 12) FMA256(1, 13) FMA256(2, 14) FMA256(3, 12) FMA256(4, 13) FMA256(5, 14)
                         FMA256(6, 12) FMA256(7, 13) FMA256(8, 14) FMA256(9, 12) FMA256(10, 13)
                             FMA256(11, 14) "dec %0\n\tjnz 1b\n\tvzeroupper"
                     : "+r"(turns)
                     :
                     : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                       "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

/* GMAC/s of loop(turns) at macs a turn, best of `repeats` */
static double peak(void (*loop)(long), double macs, int repeats)
{
    const long turns = 20000000;
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const double t = now();
        loop(turns);
        const double dt = now() - t;
        best = dt < best ? dt : best;
    }
    return (double)turns * macs / best * 1e-9;
}

static float uniform(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) * (1.0f / 16777216.0f) - 0.5f;
}

int main(int argc, char **argv)
{
    const int repeats = argc > 1 ? atoi(argv[1]) : 2000;
    enum { B = 32, I = 784, U = 128 };
    const int avx512 = __builtin_cpu_supports("avx512f"), fma = __builtin_cpu_supports("fma");
    if (!__builtin_cpu_supports("avx2")) {
        printf("error=no AVX2\n");
        return 1;
    }
    const double muladd = avx512 ? peak(muladd512, 256.0, 7) : peak(muladd256, 64.0, 7);
    const double fused = !fma ? 0.0 : avx512 ? peak(fma512, 256.0, 7) : peak(fma256, 96.0, 7);

    float *x = malloc(sizeof(float) * B * I), *w = malloc(sizeof(float) * U * I), *bias = malloc(sizeof(float) * U);
    float *y = malloc(sizeof(float) * B * U), *dy = malloc(sizeof(float) * B * U), *dw = malloc(sizeof(float) * U * I);
    if (!x || !w || !bias || !y || !dy || !dw) return 1;
    uint32_t state = 1u;
    for (int i = 0; i < B * I; ++i) x[i] = uniform(&state);
    for (int i = 0; i < U * I; ++i) w[i] = uniform(&state);
    for (int i = 0; i < U; ++i) bias[i] = uniform(&state);
    for (int i = 0; i < B * U; ++i) { /* behind a ReLU: half of dy ±0 */
        const float v = uniform(&state);
        dy[i] = v < 0.0f ? 0.0f : v;
    }
    double forward = 1e30, weight_grad = 1e30;
    long counted = 0;
    for (int i = 0; i < B * U; ++i) counted += dy[i] != 0.0f;
    for (int r = 0; r < repeats; ++r) {
        double t = now();
        mt_kernel_dense_f32_forward(x, w, bias, y, B, I, U, MT_FUSED_NONE);
        double dt = now() - t;
        forward = dt < forward ? dt : forward;
        t = now();
        mt_kernel_dense_f32_backward(x, w, dy, NULL, dw, NULL, B, I, U, 1);
        dt = now() - t;
        weight_grad = dt < weight_grad ? dt : weight_grad;
    }
    const double macs = (double)B * I * U;
    printf("isa=%s muladd_peak=%.1f fma_peak=%.1f forward_us=%.1f forward_gmacs=%.1f dw_us=%.1f "
           "dw_counted_gmacs=%.1f dw_counted=%.3f\n",
           avx512 ? "AVX-512" : "AVX2", muladd, fused, forward * 1e6, macs / forward * 1e-9, weight_grad * 1e6,
           (double)counted * I / weight_grad * 1e-9, (double)counted / (B * U));
    free(x), free(w), free(bias), free(y), free(dy), free(dw);
    return 0;
}
