/*
 * mt_fmaf_soft: a·b + c rounded once to binary32 (round to nearest, ties to even) in integer
 * arithmetic only, for cores without an FPU (mt_fma.h says why newlib's fmaf will not do).
 *
 * A finite operand is m·2^(e-150), e its exponent field and m = 2^23 + fraction (24 bits), or
 * for a subnormal (e = 0) m = fraction and e = 1: no flush to zero. The exact product ma·mb
 * fits a uint64_t (a subnormal factor's is shifted up to 47 or 48 bits too). Both terms are
 * held as X/2^61 · 2^(E-127): the product with X in [2^61, 2^63), c in [2^61, 2^62). The term
 * with the smaller E is shifted right to the other's E; the sum is normalised to bit 63 and
 * rounded once at bit 40 (bit 40 + 1 - E' for a subnormal result of exponent field E' <= 0).
 *
 * Sticky ("jam") bit: bits shifted out are ORed into bit 0. The unshifted term has its lowest
 * set bit at 15 or higher, so a jammed sum S is odd and the exact sum lies strictly inside
 * (S-1, S+1), an interval holding no rounding boundary (multiples of 2^39 after the
 * normalising shift, which moves a jammed sum by 3 bits at most): rounding S rounds the exact
 * sum. Bits are only lost when the smaller term is shifted past its lowest set bit, which
 * puts it below 2^47 while the larger is at least 2^61, so the sum keeps its leading bit at 60
 * or higher: a deep cancellation happens only in an exact sum.
 *
 * NaN and infinity follow ARM's FPMulAdd with FPSCR.DN = 0 (the VFMA of an M4F), see special();
 * built for RISC-V, every NaN result is the canonical NaN, as fmadd.s returns it.
 */
#include "mt_fma.h"

#include <stdint.h>

#include "float_bits.h"

#define SIGN_BIT 0x80000000u
#define QUIET_BIT 0x00400000u    /* the top fraction bit: set in a quiet NaN */
#define INF_BITS 0x7F800000u
#define DEFAULT_NAN 0x7FC00000u  /* ARM's default NaN, RISC-V's canonical NaN */

/* RISC-V's F extension (and libgcc's soft float there) returns the canonical NaN for every NaN
 * result, whatever NaNs came in; ARM and x86 keep an operand's. */
#if defined(__riscv)
#define CANONICAL_NAN_ONLY 1
#else
#define CANONICAL_NAN_ONLY 0
#endif

/* Leading zeros of x != 0 (one CLZ on the M3). */
static int clz32(uint32_t x)
{
#if defined(__GNUC__)
    return __builtin_clz(x);
#else
    int n = 0;
    while (!(x & SIGN_BIT)) {
        x <<= 1;
        ++n;
    }
    return n;
#endif
}

/* Leading zeros of x != 0. */
static int clz64(uint64_t x)
{
    const uint32_t hi = (uint32_t)(x >> 32);
    return hi ? clz32(hi) : 32 + clz32((uint32_t)x);
}

/* x >> n for n >= 0, with every bit shifted out ORed into bit 0; in 32-bit halves, as the M3
 * has no 64-bit shifts (hi << 1 << (63 - n) is hi << (64 - n) without a shift by 32). */
static uint64_t shift_right_jam(uint64_t x, int n)
{
    const uint32_t hi = (uint32_t)(x >> 32), lo = (uint32_t)x;
    if (n == 0)
        return x;
    if (n < 32)
        return (uint64_t)(hi >> n) << 32 | (lo >> n | hi << (32 - n) | (lo << (32 - n) != 0));
    if (n < 64)
        return hi >> (n - 32) | ((hi << 1 << (63 - n) | lo) != 0);
    return x != 0;
}

static int is_nan(uint32_t u) { return (u << 1) > (INF_BITS << 1); }
static int is_snan(uint32_t u) { return is_nan(u) && !(u & QUIET_BIT); }
static int is_inf(uint32_t u) { return (u << 1) == (INF_BITS << 1); }
static int is_zero(uint32_t u) { return (u << 1) == 0; }

/*
 * Some operand is an infinity or a NaN. ARM's FPMulAdd: the first signalling NaN in the order
 * c, a, b comes back quiet (payload and sign kept); else a quiet c, except that a quiet c with
 * a·b = inf·0 gives the default NaN; else a quiet a, then b. Without NaNs, inf·0 and
 * inf + (-inf) are invalid (default NaN), and any other infinity wins with its sign.
 */
static uint32_t special(uint32_t ua, uint32_t ub, uint32_t uc)
{
    const int inf_times_zero = (is_inf(ua) && is_zero(ub)) || (is_zero(ua) && is_inf(ub));
    if (is_snan(uc))
        return uc | QUIET_BIT;
    if (is_snan(ua))
        return ua | QUIET_BIT;
    if (is_snan(ub))
        return ub | QUIET_BIT;
    if (is_nan(uc))
        return inf_times_zero ? DEFAULT_NAN : uc;
    if (is_nan(ua))
        return ua;
    if (is_nan(ub))
        return ub;
    if (inf_times_zero)
        return DEFAULT_NAN;
    if (is_inf(ua) || is_inf(ub)) {
        const uint32_t sign_p = (ua ^ ub) & SIGN_BIT;
        return is_inf(uc) && (uc & SIGN_BIT) != sign_p ? DEFAULT_NAN : (sign_p | INF_BITS);
    }
    return uc; /* c = ±inf, a·b finite */
}

float mt_fmaf_soft(float a, float b, float c)
{
    const uint32_t ua = mt_f32_bits(a), ub = mt_f32_bits(b), uc = mt_f32_bits(c);
    const int ea = (int)(ua >> 23 & 0xFFu), eb = (int)(ub >> 23 & 0xFFu);
    const int ec = (int)(uc >> 23 & 0xFFu);
    uint32_t sign = (ua ^ ub) & SIGN_BIT; /* of a·b, then of the sum */
    if (ea == 0xFF || eb == 0xFF || ec == 0xFF) {
        const uint32_t r = special(ua, ub, uc);
        return mt_f32_from_bits(CANONICAL_NAN_ONLY && is_nan(r) ? DEFAULT_NAN : r);
    }
    /* a·b = ±0 exactly: the sum is c, or for c = ±0 the zero of the common sign, else +0. */
    if (is_zero(ua) || is_zero(ub))
        return mt_f32_from_bits(!is_zero(uc) || (uc & SIGN_BIT) == sign ? uc : 0u);

    /* a·b = ma·mb · 2^(ea+eb-300) = (ma·mb·2^15)/2^61 · 2^(e-127) with e = ea + eb - 127; a
     * subnormal factor has no implicit one and an exponent of 1. */
    uint32_t ma = (ua & 0x7FFFFFu) | 0x800000u, mb = (ub & 0x7FFFFFu) | 0x800000u;
    int e = ea + eb - 127;
    if (ea == 0) {
        ma -= 0x800000u;
        ++e;
    }
    if (eb == 0) {
        mb -= 0x800000u;
        ++e;
    }
    uint64_t sum = (uint64_t)ma * mb;
    if ((uint32_t)(sum >> 32) < 1u << 14) { /* a subnormal factor: shift up to [2^46, 2^48) */
        const int up = clz64(sum) - 17;
        sum <<= up;
        e -= up;
    }
    sum <<= 15; /* in [2^61, 2^63) */

    if (!is_zero(uc)) {
        /* The other term, c = (mc·2^38)/2^61 · 2^(e_other-127) in [2^61, 2^62); a subnormal c
         * is f·2^(1-150), f shifted up to bit 23. */
        uint32_t mc = (uc & 0x7FFFFFu) | 0x800000u, sign_other = uc & SIGN_BIT;
        int e_other = ec;
        if (ec == 0) {
            const int up = clz32(mc - 0x800000u) - 8;
            mc = (mc - 0x800000u) << up;
            e_other = 1 - up;
        }
        uint64_t other = (uint64_t)mc << 38;
        if (e < e_other) { /* c has the larger exponent: swap, so that sum holds it */
            const uint64_t product = sum;
            const uint32_t sign_p = sign;
            const int e_p = e;
            sum = other;
            sign = sign_other;
            e = e_other;
            other = product;
            sign_other = sign_p;
            e_other = e_p;
        }
        other = shift_right_jam(other, e - e_other); /* aligned to sum's exponent e */
        if (sign_other == sign) {
            sum += other; /* < 2^63 + 2^62: no carry out */
        } else if (sum >= other) {
            sum -= other;
            if (sum == 0)
                return mt_f32_from_bits(0u); /* exact cancellation: +0 when rounding to nearest */
        } else {
            sum = other - sum;
            sign = sign_other;
        }
    }

    /* Normalise: sum/2^61 = (sum·2^n/2^63) · 2^(2-n), so after the shift by n = clz the value
     * is (sum/2^63) · 2^(e-127), the leading bit at 63. */
    const int n = clz64(sum);
    sum <<= n;
    e += 2 - n;
    if (e >= 255)
        return mt_f32_from_bits(sign | INF_BITS); /* >= 2^128: beyond FLT_MAX + half an ulp */
    if (e <= 0) {
        /* Subnormal: the value in units of 2^-149 is (sum/2^40) / 2^(1-e); shifting sum right
         * by 1 - e first lets the one rounding below round at the subnormal precision. */
        sum = shift_right_jam(sum, 1 - e);
        e = 1;
    }
    /* Keep bits 63..40 (hi >> 8), bit 39 is the round bit (hi bit 7), the rest sticky. For a
     * normal result hi >> 8 has bit 23 set, which adds the 1 missing from e - 1; a carry out of
     * the rounding increments the exponent, up to the infinity 0x7F800000. */
    const uint32_t hi = (uint32_t)(sum >> 32) | ((uint32_t)sum != 0);
    uint32_t r = sign + ((uint32_t)(e - 1) << 23) + (hi >> 8);
    r += hi >> 7 & 1u;         /* round half up, */
    if ((hi & 0xFFu) == 0x80u) /* but an exact tie goes to the even neighbour */
        r &= ~1u;
    return mt_f32_from_bits(r);
}
