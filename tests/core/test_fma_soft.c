/*
 * mt_fmaf_soft (mt_fma.c), mt_fmaf_via_double and the build's mt_fmaf (mt_fma.h) against a
 * correctly rounded reference: the C library's fmaf, which glibc rounds correctly (on x86-64
 * with FMA3 it is one vfmadd), or on RISC-V the F extension's fmadd.s (picolibc's fmaf rounds
 * twice on rv32imac; tests/boards/test_board_fma.py runs this file as firmware on both RISC-V
 * boards, under QEMU's E34, which has F). Bit for bit for every non-NaN result (the midpoint
 * cases below are the ones rounding a double sum again gets wrong). A NaN result of
 * mt_fmaf_soft and mt_fmaf_via_double is checked against ARM's FPMulAdd rule written out again
 * here (arm_nan), on RISC-V against its canonical NaN, and the reference and mt_fmaf must agree
 * that the result is a NaN (x86 picks a different NaN where several meet; on RISC-V mt_fmaf's
 * must be the canonical NaN too).
 *
 * Cases: the cross product of special values (zeros, subnormals, normal limits, 1 ± ulp,
 * powers of two, infinities, quiet and signalling NaNs) in all three positions, hand-written
 * cases with their expected bits (signed zeros, ties, overflow, every NaN rule), then
 * N_RANDOM draws of each class: random bits; heavy cancellation (c near -a·b); c tiny next to
 * a·b (sticky bits, exact ties built as midpoint - a·b, one-ulp neighbours); results in the
 * subnormal range (exact ties at the subnormal precision included); the overflow boundary.
 * The draws come from mt_test.h's fixed-seed xorshift, so every run tests the same cases.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "float_bits.h"
#include "mt_fma.h"
#include "mt_test.h"

/* Draws per class; a build run under an emulator (qemu-user: ~8 s for 2M) may set fewer. */
#ifdef MT_TEST_FMA_RANDOM
#define N_RANDOM MT_TEST_FMA_RANDOM
#else
#define N_RANDOM 2000000u
#endif
#define SIGN 0x80000000u
#define QNAN_BIT 0x00400000u
#define DEFAULT_NAN 0x7FC00000u /* ARM's default NaN, RISC-V's canonical NaN */
#define FLT_MAX_BITS 0x7F7FFFFFu

/* RISC-V returns the canonical NaN for every NaN result (mt_fma.h) */
#if defined(__riscv)
#define CANONICAL_NAN_ONLY 1
#else
#define CANONICAL_NAN_ONLY 0
#endif

static int nan_bits(uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }
static int inf_bits(uint32_t u) { return (u & 0x7FFFFFFFu) == 0x7F800000u; }
static int zero_bits(uint32_t u) { return (u & 0x7FFFFFFFu) == 0; }

/* ARM FPMulAdd, FPSCR.DN = 0: 1 and the NaN in *out when the result is a NaN, else 0. */
static int arm_nan(uint32_t a, uint32_t b, uint32_t c, uint32_t *out)
{
    const uint32_t order[3] = {c, a, b};
    const int inf_times_zero = (inf_bits(a) && zero_bits(b)) || (zero_bits(a) && inf_bits(b));
    for (int i = 0; i < 3; ++i)
        if (nan_bits(order[i]) && !(order[i] & QNAN_BIT)) {
            *out = order[i] | QNAN_BIT;
            return 1;
        }
    for (int i = 0; i < 3; ++i)
        if (nan_bits(order[i])) {
            *out = i == 0 && inf_times_zero ? DEFAULT_NAN : order[i];
            return 1;
        }
    if (inf_times_zero || ((inf_bits(a) || inf_bits(b)) && inf_bits(c) && ((a ^ b ^ c) & SIGN))) {
        *out = DEFAULT_NAN;
        return 1;
    }
    return 0;
}

/* The NaN mt_fmaf_soft returns for fma(a, b, c): 1 and the NaN in *out when the result is a
 * NaN (ARM's rule, RISC-V's canonical NaN there), else 0. */
static int expected_nan(uint32_t a, uint32_t b, uint32_t c, uint32_t *out)
{
    const int nan = arm_nan(a, b, c, out);
    if (nan && CANONICAL_NAN_ONLY)
        *out = DEFAULT_NAN;
    return nan;
}

/* The correctly rounded reference. On RISC-V, fmadd.s: asm that asks the assembler for F, so
 * that a build for rv32imac (soft-float ABI, no F) has it too and runs on a core with F
 * (main() turns the FPU on); fcsr's rounding mode is 0 after reset, to nearest. */
#if defined(__riscv)
static float reference_fmaf(float a, float b, float c)
{
    uint32_t r;
    __asm__ volatile(".option push\n\t.option arch, +f\n\t"
                     "fmv.w.x ft0, %1\n\tfmv.w.x ft1, %2\n\tfmv.w.x ft2, %3\n\t"
                     "fmadd.s ft0, ft0, ft1, ft2\n\tfmv.x.w %0, ft0\n\t.option pop"
                     : "=r"(r)
                     : "r"(mt_f32_bits(a)), "r"(mt_f32_bits(b)), "r"(mt_f32_bits(c)));
    return mt_f32_from_bits(r);
}
#else
static float reference_fmaf(float a, float b, float c) { return fmaf(a, b, c); }
#endif

static long n_cases;
static int n_wrong;

/* 1 when mt_fmaf_soft(a, b, c), mt_fmaf_via_double(a, b, c) or mt_fmaf(a, b, c) is wrong: the
 * reference's bits, or the expected NaN (mt_fmaf_via_double hands every NaN and infinity to
 * mt_fmaf_soft; mt_fmaf's NaN is the target's own, canonical on RISC-V). */
static int wrong(uint32_t a, uint32_t b, uint32_t c)
{
    const float fa = mt_f32_from_bits(a), fb = mt_f32_from_bits(b), fc = mt_f32_from_bits(c);
    const uint32_t soft = mt_f32_bits(mt_fmaf_soft(fa, fb, fc));
    const uint32_t via_double = mt_f32_bits(mt_fmaf_via_double(fa, fb, fc));
    const uint32_t selected = mt_f32_bits(mt_fmaf(fa, fb, fc));
    const uint32_t lib = mt_f32_bits(reference_fmaf(fa, fb, fc));
    uint32_t want = lib;
    const int want_nan = expected_nan(a, b, c, &want);
    const int selected_bad = want_nan ? !nan_bits(selected) || (CANONICAL_NAN_ONLY && selected != want)
                                      : selected != want;
    const int bad = soft != want || via_double != want || want_nan != nan_bits(lib) || selected_bad;
    ++n_cases;
    if (bad && n_wrong++ < 20)
        printf("    fma(%08x, %08x, %08x) = %08x soft, %08x via double, %08x mt_fmaf, expected %08x "
               "(reference %08x)\n", (unsigned)a, (unsigned)b, (unsigned)c, (unsigned)soft,
               (unsigned)via_double, (unsigned)selected, (unsigned)want, (unsigned)lib);
    return bad;
}

static uint32_t rnd(void) { return mt_test_rand_u32(); }

/* Random sign and fraction with the exponent field e (1..254). */
static uint32_t rnd_with_exp(int e)
{
    return (rnd() & (SIGN | 0x7FFFFFu)) | (uint32_t)e << 23;
}

/* Exponent fields ea, eb of a product whose exponent field is e_p = ea + eb - 127. */
static void split_exp(int e_p, int *ea, int *eb)
{
    const int lo = e_p + 127 - 254 > 1 ? e_p + 127 - 254 : 1;
    const int hi = e_p + 126 < 254 ? e_p + 126 : 254;
    *ea = lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
    *eb = e_p + 127 - *ea;
}

/* The exponent field of the float nearest a·b (the double product is exact). */
static int product_exp(uint32_t a, uint32_t b)
{
    return (int)(mt_f32_bits((float)((double)mt_f32_from_bits(a) * (double)mt_f32_from_bits(b))) >> 23 & 0xFFu);
}

static void test_special_cross_product(void)
{
    static const uint32_t mag[] = {
        0x00000000, 0x00000001, 0x00000002, 0x00000003, 0x00400000, 0x007FFFFF, 0x00800000,
        0x00800001, 0x00FFFFFF, 0x0C000000, 0x1F800000, 0x33000000, 0x33800000, 0x34000000,
        0x3F000000, 0x3F7FFFFF, 0x3F800000, 0x3F800001, 0x3FA00000, 0x3FC00000, 0x3FFFFFFF,
        0x40000000, 0x3E2AAAAB, 0x40490FDB, 0x4B800000, 0x4CBEBC20, 0x5F800000, 0x7F000000,
        0x7F7FFFFE, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7FC12345, 0x7F800001, 0x7FA00005};
    enum { M = sizeof mag / sizeof mag[0], V = 2 * M };
    uint32_t v[V];
    for (int i = 0; i < M; ++i) {
        v[2 * i] = mag[i];
        v[2 * i + 1] = mag[i] | SIGN;
    }
    int bad = 0;
    for (int i = 0; i < V; ++i)
        for (int j = 0; j < V; ++j)
            for (int k = 0; k < V; ++k) bad += wrong(v[i], v[j], v[k]);
    CHECK_EQ_INT(bad, 0);
}

static void test_listed_cases(void)
{
    static const uint32_t cases[][4] = { /* a, b, c, expected */
        {0x80000000, 0x3F800000, 0x80000000, 0x80000000}, /* (-0)·1 + (-0) = -0 */
        {0x00000000, 0x3F800000, 0x80000000, 0x00000000}, /* (+0)·1 + (-0) = +0 */
        {0x80000000, 0xBF800000, 0x80000000, 0x00000000}, /* (-0)·(-1) + (-0) = +0 */
        {0x3F800000, 0x3F800000, 0xBF800000, 0x00000000}, /* 1·1 - 1 = +0 */
        {0xBF800000, 0x3F800000, 0x3F800000, 0x00000000}, /* -1·1 + 1 = +0 */
        {0x80000001, 0x00000001, 0x00000000, 0x80000000}, /* -2^-298 + 0 rounds to -0 */
        {0x00000001, 0x00000001, 0x80000000, 0x00000000}, /* +2^-298 - 0 rounds to +0 */
        {0x00000001, 0x3F000000, 0x00000000, 0x00000000}, /* 0.5 units of 2^-149: tie to 0 */
        {0x00000001, 0x3FC00000, 0x00000000, 0x00000002}, /* 1.5 units: tie to 2 */
        {0x00000001, 0x40200000, 0x00000000, 0x00000002}, /* 2.5 units: tie to 2 */
        {0x00000001, 0x40300000, 0x80000000, 0x00000003}, /* 2.75 units: 3 */
        {0x007FFFFF, 0x3F800000, 0x00000001, 0x00800000}, /* max subnormal + min: min normal */
        {0x00800000, 0xBF800000, 0x00800001, 0x00000001}, /* normals cancel to a subnormal */
        {0x7F7FFFFF, 0x3F800000, 0x73000000, 0x7F800000}, /* FLT_MAX + half ulp: tie to inf */
        {0x7F7FFFFF, 0x3F800000, 0x72FFFFFF, 0x7F7FFFFF}, /* just below the tie: FLT_MAX */
        {0x7F7FFFFF, 0x40000000, 0xFF7FFFFF, 0x7F7FFFFF}, /* 2·FLT_MAX - FLT_MAX: finite */
        {0x3F800001, 0x3F800001, 0xBF800000, 0x34800000}, /* (1+u)^2 - 1 = 2u + u^2: 2u */
        {0x3F800000, 0x3F800000, 0x33800000, 0x3F800000}, /* 1 + 2^-24: tie to even 1 */
        {0x3F800001, 0x3F800000, 0x33800000, 0x3F800002}, /* (1+u) + u/2: tie to even up */
        {0x3F800000, 0x3F800000, 0xB3000000, 0x3F800000}, /* 1 - 2^-25: tie below 1, to 1 */
        {0x3F800000, 0x3F800000, 0xB3000001, 0x3F7FFFFF}, /* just past that tie: 1 - ulp */
        /* Infinities without NaNs. */
        {0x7F800000, 0x00000000, 0x3F800000, DEFAULT_NAN}, /* inf·0 */
        {0x80000000, 0xFF800000, 0x00000000, DEFAULT_NAN}, /* 0·inf */
        {0x7F800000, 0x3F800000, 0xFF800000, DEFAULT_NAN}, /* inf - inf */
        {0x3F800000, 0xFF800000, 0x7F800000, DEFAULT_NAN}, /* -inf + inf */
        {0xFF800000, 0x3F800000, 0xFF800000, 0xFF800000}, /* -inf - inf */
        {0x7F7FFFFF, 0x7F7FFFFF, 0xFF800000, 0xFF800000}, /* overflowing product, c = -inf */
        {0x00000000, 0x00000000, 0x7F800000, 0x7F800000},
        /* NaNs: signalling first in the order c, a, b, quieted; then quiet in that order. */
        {0x7F800001, 0x7F800002, 0x7F800003, 0x7FC00003},
        {0x7FC00001, 0xFF800002, 0x7FC00003, 0xFFC00002},
        {0x7FC00001, 0x7FC00002, 0xFFA00003, 0xFFE00003},
        {0x7FC00001, 0x7FC00002, 0x7FC00003, 0x7FC00003},
        {0x3F800000, 0xFFC00002, 0x7FC00003, 0x7FC00003},
        {0x7FC00002, 0xFFC00003, 0x3F800000, 0x7FC00002},
        {0x3F800000, 0x7FC00003, 0x3F800000, 0x7FC00003},
        {0x3F800000, 0xFF812345, 0x3F800000, 0xFFC12345},
        {0x00000000, 0x00000000, 0xFF812345, 0xFFC12345},
        /* inf·0 + quiet NaN: the default NaN; + signalling NaN: that NaN quieted. */
        {0x7F800000, 0x00000000, 0xFFC12345, DEFAULT_NAN},
        {0x00000000, 0xFF800000, 0x7FC00001, DEFAULT_NAN},
        {0x7F800000, 0x80000000, 0x7F812345, 0x7FC12345},
        /* a NaN factor is no inf·0: the factor NaN (after a quiet c) wins. */
        {0x7FC00005, 0x00000000, 0x7FC00007, 0x7FC00007},
        {0x7F800005, 0x7F800000, 0x7FC00007, 0x7FC00005},
        {0x7F800000, 0x7FC00005, 0x3F800000, 0x7FC00005},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const uint32_t got = mt_f32_bits(mt_fmaf_soft(mt_f32_from_bits(cases[i][0]), mt_f32_from_bits(cases[i][1]),
                                                  mt_f32_from_bits(cases[i][2])));
        const uint32_t expected = CANONICAL_NAN_ONLY && nan_bits(cases[i][3]) ? DEFAULT_NAN : cases[i][3];
        if (!CHECK_EQ_INT(got, expected))
            printf("    case %d: fma(%08x, %08x, %08x)\n", (int)i, (unsigned)cases[i][0],
                   (unsigned)cases[i][1], (unsigned)cases[i][2]);
        CHECK(!wrong(cases[i][0], cases[i][1], cases[i][2])); /* the reference and arm_nan agree */
    }
}

static void test_random_bits(void)
{
    int bad = 0;
    for (uint32_t i = 0; i < N_RANDOM; ++i) bad += wrong(rnd(), rnd(), rnd());
    CHECK_EQ_INT(bad, 0);
}

/* N_RANDOM cases, each (a, b, c) drawn by `draw`, against the reference */
static void check_random_cases(void (*draw)(uint32_t abc[3]))
{
    int bad = 0;
    for (uint32_t i = 0; i < N_RANDOM; ++i) {
        uint32_t abc[3];
        draw(abc);
        bad += wrong(abc[0], abc[1], abc[2]);
    }
    CHECK_EQ_INT(bad, 0);
}

/* c of the opposite sign and near |a·b|: the leading bits cancel, down to exact zeros. */
static void cancellation_case(uint32_t abc[3])
{
    int ea, eb;
    split_exp(1 + (int)(rnd() % 253u), &ea, &eb);
    const uint32_t a = rnd_with_exp(ea), b = rnd_with_exp(eb);
    const uint32_t p = mt_f32_bits((float)((double)mt_f32_from_bits(a) * (double)mt_f32_from_bits(b)));
    uint32_t c = p ^ SIGN;                   /* -round(a·b) */
    const uint32_t r = rnd();
    if (r % 4u == 1u)
        c += (r >> 8) % 9u - 4u;             /* a few ulps off */
    else if (r % 4u == 2u)
        c = (c & 0xFF800000u) | (r >> 9);    /* same exponent, any fraction */
    else if (r % 4u == 3u)
        c = ((c & 0xFF800000u) - ((r >> 8 & 1u) << 23)) | (rnd() & 0x7FFFFFu); /* one below */
    abc[0] = a, abc[1] = b, abc[2] = c;
}

static void test_cancellation(void) { check_random_cases(cancellation_case); }

/* c far below a·b (sticky bits), and c = m - a·b exactly for the midpoint m between the two
 * floats around a·b (exact ties) and its one-ulp neighbours (just off the tie). */
static void test_tiny_addend(void)
{
    int bad = 0, ties = 0;
    for (uint32_t i = 0; i < N_RANDOM; ++i) {
        int ea, eb;
        split_exp(70 + (int)(rnd() % 130u), &ea, &eb);
        uint32_t a = rnd_with_exp(ea), b = rnd_with_exp(eb);
        const uint32_t r = rnd();
        if (r & 1u) { /* short fractions: a·b exact in float, often a power of two */
            a &= ~(0x7FFFFFu >> (r >> 1 & 15u));
            b &= ~(0x7FFFFFu >> (r >> 5 & 15u));
        }
        const double p = (double)mt_f32_from_bits(a) * (double)mt_f32_from_bits(b);
        const float near = (float)p; /* then the float on a·b's other side (either if equal) */
        const int up = (double)near < p || ((double)near == p && (r >> 9 & 1u));
        const float other = nextafterf(near, up ? INFINITY : -INFINITY);
        const double mid = ((double)near + (double)other) / 2; /* exact: two neighbours */
        uint32_t c;
        switch (r >> 10 & 3u) {
        case 0: /* far below: exponent 24 to 63 under a·b's, any fraction, either sign */
            c = rnd_with_exp(product_exp(a, b) - 24 - (int)(rnd() % 40u));
            break;
        case 1: /* half an ulp or one ulp of a·b, either sign */
            c = ((uint32_t)(product_exp(a, b) - 24 + (int)(r >> 12 & 1u)) << 23) | (r & SIGN);
            break;
        default: { /* the midpoint minus a·b, if that is a float, then maybe one ulp off */
            const double d = mid - p;
            c = mt_f32_bits((float)d);
            if ((double)(float)d == d && d != 0)
                ++ties;
            if (r >> 10 & 1u)
                c += (r >> 13 & 1u) ? 1u : (uint32_t)-1;
            break;
        }
        }
        bad += wrong(a, b, c);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK((uint32_t)ties > N_RANDOM / 4); /* the generator does make exact ties */
}

/* An odd integer of exactly len bits (1..24), random between its top and bottom bits. */
static uint32_t odd_of_length(int len)
{
    return ((rnd() & ((1u << len) - 1u)) | 1u | (1u << (len - 1)));
}

/* a·b exactly a midpoint between two floats, plus c tiny or zero: the bits of c that are
 * shifted out (the sticky bit) alone decide the rounding. Normal range: a·b = q1·q2·2^x with
 * q1·q2 odd and 25 bits long. Subnormal range: a·b = q·(2^j ± 1)·2^(-150-j) = q·2^-150 ±
 * q·2^(-150-j) with q odd and q < 2^j, a subnormal midpoint plus or minus a tiny amount; and
 * a·b = (2^A + 1)(2^A - 1)·2^x = 2^(x+2A) - 2^x, 2^(x+2A) at most half the smallest subnormal,
 * next to c = n·2^-149 (any subnormal n): the 2^x, 40 or more bits under the rounding bit, is
 * all that separates c - a·b from a midpoint (found by the final shift's sticky bit, not by the
 * alignment's; in double arithmetic the sum rounds onto that midpoint). */
static void midpoint_plus_tiny_case(uint32_t abc[3])
{
    const uint32_t r = rnd();
    uint32_t a, b, c;
    if ((r & 3u) == 3u) {
        const int A = 20 + (int)(r >> 2 & 3u), u = (int)(r >> 4 & 3u);
        const int sa = -2 * A - u - 1 - (int)(rnd() % 60u); /* then b's exponent >= -149 */
        a = mt_f32_bits((float)ldexp(ldexp(1.0, A) + 1.0, sa)) | (r >> 6 & 1u) << 31;
        b = mt_f32_bits((float)ldexp(ldexp(1.0, A) - 1.0, -150 - u - 2 * A - sa)) |
            (r >> 7 & 1u) << 31;
        /* c a few smallest subnormals, or any subnormal: the midpoint of c's binade then
         * has a double's low 29 fraction bits all zero (mt_fmaf_via_double's subnormal test) */
        c = ((r >> 8 & 1u) ? (r >> 9) % 8u : rnd() & 0x7FFFFFu) | (r >> 12 & 1u) << 31;
    } else if (r & 1u) {
        uint32_t q1, q2;
        uint64_t q;
        do {
            const int len1 = 2 + (int)(rnd() % 23u);
            q1 = odd_of_length(len1);
            q2 = odd_of_length(25 - len1 + (int)(rnd() & 1u));
            q = (uint64_t)q1 * q2;
        } while (q >> 24 != 1u);
        const int x = -100 + (int)(rnd() % 180u), s = (int)(rnd() % 40u) - 20; /* b < 2^124 */
        a = mt_f32_bits((float)ldexp((double)q1, s)) | (r & SIGN);
        b = mt_f32_bits((float)ldexp((double)q2, x - s)) | (r << 1 & SIGN);
        /* a·b = q·2^x, its last bit at 2^x: c = 0, or c below that bit */
        const int ec = x + 126 - (int)(rnd() % 40u); /* 2^(x-1) and below */
        c = (r >> 2 & 7u) == 0 ? (r & SIGN)
            : ec >= 1           ? rnd_with_exp(ec)
                                : (rnd() & (SIGN | 0xFFFu));
    } else {
        const int j = 13 + (int)(r >> 1 & 7u);               /* 13..20 */
        const uint32_t q = (rnd() & ((1u << 12) - 1u)) | 1u; /* odd, < 2^12 <= 2^j */
        const double qj = ldexp(1.0, j) + ((r & 16u) ? 1.0 : -1.0);
        const int s = (int)(r >> 5 & 31u);
        a = mt_f32_bits((float)ldexp((double)q, -60 - s)) | (r & SIGN);
        b = mt_f32_bits((float)ldexp(qj, -90 + s - j)) | (r << 1 & SIGN);
        c = (r >> 10 & 3u) ? (r >> 12 & SIGN) : (((r >> 13) % 5u) | (r >> 14 & SIGN));
    }
    abc[0] = a, abc[1] = b, abc[2] = c;
}

static void test_midpoint_plus_tiny(void) { check_random_cases(midpoint_plus_tiny_case); }

/* a·b near or below 2^-126, c a subnormal, a tiny normal, ±0 or near -a·b; and exact ties at
 * the subnormal precision: a·b = q·2^(-150-t) for an odd q, c = 0 or a few units of 2^-149. */
static void subnormal_results_case(uint32_t abc[3])
{
    const uint32_t r = rnd();
    uint32_t a, b, c;
    if (r & 1u) {
        int ea, eb;
        split_exp(-30 + (int)(rnd() % 36u), &ea, &eb); /* a·b in [2^-157, 2^-121) */
        a = rnd_with_exp(ea);
        b = rnd_with_exp(eb);
        if (r & 2u) /* c a subnormal or the smallest normals */
            c = (rnd() & (SIGN | 0x7FFFFFu)) | (r >> 2 & 1u) << 23;
        else if (r & 4u) /* c near -a·b */
            c = (mt_f32_bits((float)((double)mt_f32_from_bits(a) * (double)mt_f32_from_bits(b))) ^ SIGN) +
                (r >> 3) % 5u - 2u;
        else
            c = r & 8u ? SIGN : 0u;
    } else {
        const double q1 = (double)((rnd() & 0xFFFu) | 1u), q2 = (double)((rnd() & 0xFFFu) | 1u);
        const int t = (int)(r >> 1 & 7u), s = (int)(r >> 4 & 31u);
        a = mt_f32_bits((float)ldexp(q1, -60 - s)) | (r & SIGN);
        b = mt_f32_bits((float)ldexp(q2, -90 + s - t));
        c = (r >> 9 & 3u) == 0 ? (r & SIGN) : ((r >> 11) % 7u) | (r << 1 & SIGN);
    }
    abc[0] = a, abc[1] = b, abc[2] = c;
}

static void test_subnormal_results(void) { check_random_cases(subnormal_results_case); }

/* a·b around FLT_MAX (beyond it too, with c bringing the sum back), c large of either sign;
 * and exact ties at FLT_MAX + half an ulp: (2k+1)·2^103 + (FLT_MAX - k·2^104). */
static void overflow_boundary_case(uint32_t abc[3])
{
    const uint32_t r = rnd();
    uint32_t a, b, c;
    if (r & 1u) {
        int ea, eb;
        split_exp(248 + (int)(rnd() % 10u), &ea, &eb);
        a = rnd_with_exp(ea);
        b = rnd_with_exp(eb);
        if (r & 2u)
            c = rnd_with_exp(236 + (int)(rnd() % 19u));
        else
            c = (FLT_MAX_BITS - (r >> 3) % 4u) | (r << 29 & SIGN);
    } else {
        const uint32_t k = r >> 8 & 0xFFFu;
        const int s = (int)(r >> 1 & 31u);
        a = mt_f32_bits((float)ldexp((double)(2 * k + 1), 50 + s));
        b = mt_f32_bits((float)ldexp(1.0, 53 - s));
        c = FLT_MAX_BITS - k + (r >> 6 & 3u) - 1u; /* the tie, or 1 ulp below, 1 or 2 above */
        if (r >> 20 & 1u) { /* the mirror image: negative */
            a ^= SIGN;
            c ^= SIGN;
        }
    }
    abc[0] = a, abc[1] = b, abc[2] = c;
}

static void test_overflow_boundary(void) { check_random_cases(overflow_boundary_case); }

int main(void)
{
#if defined(__riscv) && !defined(__riscv_flen)
    /* the reference's fmadd.s: mstatus.FS = Initial (the startup code does it only with F) */
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\t"
                     "li t0, 0x2000\n\tcsrs mstatus, t0\n\t.option pop" ::: "t0");
#endif
    mt_test_seed(0x2545F491u);
    test_special_cross_product();
    test_listed_cases();
    test_random_bits();
    test_cancellation();
    test_tiny_addend();
    test_midpoint_plus_tiny();
    test_subnormal_results();
    test_overflow_boundary();
    printf("%ld cases compared, %d wrong\n", n_cases, n_wrong);
    return MT_TEST_END();
}
