/*
 * The x86-64 target's columns (select/kernels.def: avx512, avx2 and portable), chosen at run
 * time, once a call, from the CPU's features (select/x86_64.c): the AVX-512F build of ops/x86/
 * and optimizers/ (their sources are written in AVX-512's 16 lanes), the same sources' AVX2
 * build (over ops/x86/avx2_shim.h: the same operations on the same lanes, so the same bits;
 * needs FMA3 too), and the portable column for a CPU with neither. Every function is compiled
 * with a target attribute, not -mavx512f or -mavx2, so the library loads on any x86-64.
 */
#ifndef MT_SELECT_X86_64_H
#define MT_SELECT_X86_64_H

#define MT_X86_PORTABLE 0 /* the portable column */
#define MT_X86_AVX2 1     /* the AVX2 build (avx2_shim.h), with FMA3 */
#define MT_X86_AVX512 2   /* AVX-512F (its FMA included) */

/* The level the entries take: the CPU's, unless mt_x86_set_level chose one. Pure: it changes
 * only through mt_x86_set_level (the CPU's is found once), so an entry whose three cells are
 * one kernel (the int8 rows) costs no call. */
#if defined(__GNUC__)
__attribute__((pure))
#endif
int mt_x86_level(void);
/* Force a level (the tests run each the CPU has; a level the CPU lacks is refused and the
 * level in force returned); -1 goes back to the CPU's. */
int mt_x86_set_level(int level);
/* The best level this CPU runs. */
int mt_x86_cpu_level(void);

/* 1 when the level in force has vectors (the int8 siblings' products ask: s8_dot.h) */
static inline int mt_x86_vector(void)
{
    return mt_x86_level() >= MT_X86_AVX2;
}

/* the kernel of the level in force among a row's avx512, avx2 and portable cells */
#define MT_PICK_X86(base, avx512, avx2, mve, dsp, soft_float, portable)                                   \
    (mt_x86_level() >= MT_X86_AVX512 ? (base##_##avx512)                                                \
     : mt_x86_level() >= MT_X86_AVX2 ? (base##_##avx2)                                                  \
                                     : (base##_##portable))
#define MT_KERNEL_PICK MT_PICK_X86
#define MT_KERNEL_COLUMN "x86_64"

#endif /* MT_SELECT_X86_64_H */
