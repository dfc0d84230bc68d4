/*
 * libFuzzer harness: the checkpoint reader, and what a loaded session does next.
 *
 * Input: one selector byte, then bytes whose meaning the selector's bit 7 picks.
 *   selector bits 0-1  the loading session: config 0..3 of the fixed model 0 (SGD,
 *                      SGD + momentum, Adam, AdamW: 0, 1 and 2 optimizer state arrays)
 *   selector bits 2-3  its update mode: 0 fused, 1 guard_gradients, 2 accumulate +
 *                      mt_session_optimizer_step, 3 fused with SUM reduction
 *   bit 7 = 0  raw: the rest is a checkpoint, loaded as given and with its CRC trailer
 *              recomputed (so the fuzzer gets past the CRC to the structure checks).
 *              With bit 4 set the loading session is instead the int8 CNN trained in place
 *              with float master copies (tests/core/int8_in_place_util.h; version 4 typed
 *              records): SGD, with momentum when bit 0 is set, accumulate +
 *              mt_session_optimizer_step in update mode 2, else fused.
 *   bit 7 = 1  contents: a valid version 2 checkpoint the harness saved at start-up from a
 *              trained session of config (bits 4-5), with optimizer state and properties
 *              when bit 6 is set, is edited by the rest of the input, 7 bytes per edit
 *              (u16 position, u8 kind, u32 value; see edit()), its CRC recomputed, and
 *              loaded. Structure stays valid, so the fuzzer spends its time on values:
 *              weights, optimizer state, counters, learning rates, β powers, the version.
 * Properties: no crash or sanitizer report; a refused checkpoint leaves the arena byte for
 * byte unchanged ("validated before anything is written"); a loaded session holds only
 * finite weights and optimizer state, still holds them after one step in its mode (the
 * step may be refused as MT_ERR_NUMERIC, never leave a NaN or infinity), and saves a
 * checkpoint that loads back. (The int8 session: its float weights finite through
 * mt_session_param, as the typed records' optimizer state is not parsed here; the int8
 * weights and int32 biases hold any value of their type.)
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_models.h"
#include "fuzz_util.h"
#include "int8_in_place_util.h"
#include "microtrain.h"

#define ARENA_BYTES (64u * 1024u)
#define HEADER 80u
#define EDIT_BYTES 7
#define MAX_EDITS 16

static uint8_t *image;
static size_t image_bytes;
static uint8_t *int8_image; /* the int8 CNN trained in place, with master copies */
static size_t int8_image_bytes;
static _Alignas(16) uint8_t arena[ARENA_BYTES];
static _Alignas(16) uint8_t before[ARENA_BYTES];
static uint8_t out[ARENA_BYTES];

/* The templates of the contents mode: [saver config][with state]. */
static uint8_t *templates[FM_CK_CONFIGS][2];
static size_t template_bytes[FM_CK_CONFIGS][2];

static void configure(int which, int mode, mt_train_config *cfg)
{
    fm_checkpoint_config(which, cfg);
    cfg->guard_gradients = mode == 1;
    cfg->accumulate_gradients = mode == 2;
    if (mode == 3) cfg->reduction = MT_REDUCTION_SUM;
}

/* Every weight and optimizer state value of a checkpoint this harness's session wrote
 * (so its structure is trusted) is finite. */
static int values_finite(const uint8_t *ck)
{
    const uint32_t records = fz_get_u32(ck + 16), arrays = fz_get_u32(ck + 24);
    size_t off = HEADER;
    for (uint32_t r = 0; r < records; ++r) {
        const uint32_t count = fz_get_u32(ck + off + 4);
        off += 8;
        for (uint32_t i = 0; i < count * (1 + arrays); ++i, off += 4) {
            const uint32_t bits = fz_get_u32(ck + off);
            float x;
            memcpy(&x, &bits, 4);
            if (!isfinite(x)) return 0;
        }
    }
    return 1;
}

/* Every float weight of s (mt_session_param: trained ones in the arena) is finite. */
static int weights_finite(mt_session *s)
{
    int32_t count;
    if (mt_session_param_count(s, &count) != MT_OK) abort();
    for (int32_t p = 0; p < count; ++p) {
        mt_param_info info;
        if (mt_session_param(s, p, &info) != MT_OK) abort();
        for (int32_t i = 0; i < info.count; ++i) /* the arena's first info.held, then the image's */
            if (!isfinite(i < info.held ? info.data[i] : info.image_data[i])) return 0;
    }
    return 1;
}

/* Save s with its state into out; abort unless that works and every value is finite: every
 * record's values (float_records: the float sessions' checkpoints, which values_finite
 * parses), else the int8 session's float weights (its typed records are not parsed here). */
static size_t save_checked(mt_session *s, int float_records)
{
    size_t bytes;
    fz_buffer sink = {out, 0, sizeof out};
    if (mt_checkpoint_bytes(s, 1, NULL, 0, &bytes) != MT_OK) abort();
    if (mt_checkpoint_save(s, 1, NULL, 0, fz_write, &sink) != MT_OK || sink.size != bytes) abort();
    /* a loaded or trained session holds a NaN or infinity */
    if (!(float_records ? values_finite(out) : weights_finite(s))) abort();
    return sink.size;
}

/* Load ck into a fresh session of img under cfg, then step and save: the properties above.
 * float_records: the session's checkpoints hold float32 records only (values_finite parses
 * them); else the int8 session's typed ones. */
static void run_session(const uint8_t *img, size_t img_bytes, const mt_train_config *cfg,
                        int float_records, const uint8_t *ck, size_t size)
{
    mt_session *s;
    if (mt_session_init(&s, img, img_bytes, cfg, arena, sizeof arena) != MT_OK) abort();
    mt_memory_plan plan;
    mt_session_plan(s, &plan);
    memcpy(before, arena, plan.total_bytes);
    fz_buffer src = {(uint8_t *)ck, size, size};
    mt_status st = mt_checkpoint_load(s, size, fz_read, &src, fz_property, NULL);
    if (st != MT_OK) {
        if (st != MT_ERR_BAD_CHECKPOINT && st != MT_ERR_CHECKPOINT_MISMATCH) abort();
        if (memcmp(before, arena, plan.total_bytes) != 0) abort(); /* refused: nothing written */
        return;
    }
    save_checked(s, float_records); /* what was loaded is finite */

    /* one step in the session's mode: it may be refused, never poison a weight */
    fm_fill(s, 2, 99u, 0);
    float loss;
    if (cfg->accumulate_gradients) {
        if (mt_session_zero_grad(s) != MT_OK) abort();
        st = mt_session_accumulate(s, 2, &loss);
        if (st == MT_OK) st = mt_session_optimizer_step(s);
    } else {
        st = mt_session_train_step(s, 2, &loss);
    }
    if (st != MT_OK && st != MT_ERR_NUMERIC) abort();
    const size_t bytes = save_checked(s, float_records);
    fz_buffer back = {out, bytes, bytes};
    if (mt_checkpoint_load(s, bytes, fz_read, &back, NULL, NULL) != MT_OK) abort();
}

static void run(int which, int mode, const uint8_t *ck, size_t size)
{
    mt_train_config cfg;
    configure(which, mode, &cfg);
    run_session(image, image_bytes, &cfg, 1, ck, size);
}

/* The int8 session (selector bit 4 in raw mode): SGD, momentum 0.9 when bit 0 is set, the
 * update accumulated in mode 2, else fused; gen_corpus's version 4 seed was saved by it. */
static void run_int8(int selector, const uint8_t *ck, size_t size)
{
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = MT_OPTIMIZER_SGD, cfg.batch_size = 2, cfg.learning_rate = 0.2f;
    cfg.momentum = (selector & 1) ? 0.9f : 0.0f;
    cfg.accumulate_gradients = ((selector >> 2) & 3) == 2;
    run_session(int8_image, int8_image_bytes, &cfg, 0, ck, size);
}

/* ---- the contents mode ---- */

static void put_f32(uint8_t *p, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    fz_put_u32(p, u);
}

static float get_f32(const uint8_t *p)
{
    const uint32_t u = fz_get_u32(p);
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static void put_u64(uint8_t *p, uint64_t v)
{
    fz_put_u32(p, (uint32_t)v);
    fz_put_u32(p + 4, (uint32_t)(v >> 32));
}

/* One edit of a word at 4-byte position pos (header fields from the optimizer on, records,
 * properties; never the structure before offset 20 nor the trailer):
 *   0 the raw u32 value            1 a special float (NaN, ±Inf, ±FLT_MAX, ±0, denormals, ...)
 *   2 scale the float by 2^(v%256 - 128)   3 negate the float (sign bit)
 *   4 add a small signed integer   5 a special u64 at the 8-byte field holding pos
 *   6 a special double at the same  7 rewrite the header as version 1 (offset 52 zeroed) */
static void edit(uint8_t *ck, size_t size, const uint8_t *e)
{
    static const float floats[16] = {NAN, -NAN, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 0.0f, -0.0f,
                                     1e-45f, -1e-45f, FLT_MIN, 1e30f, -1e30f, 1.0f, -1.0f, 3e38f};
    static const uint64_t u64s[6] = {UINT64_MAX, 1ull << 63, INT64_MAX, 0, 1, 1ull << 31};
    static const double doubles[8] = {0.0, -0.0, 1.0, 0.5, 1e-320, 1.0000000000000002, -1e-300, NAN};
    const uint32_t words = (uint32_t)((size - 4 - 20) / 4);
    const size_t pos = 20 + 4u * ((uint32_t)(e[0] | e[1] << 8) % words);
    const uint32_t v = fz_get_u32(e + 3);
    uint8_t *p = ck + pos;
    uint8_t *field = ck + (pos & ~(size_t)7); /* the header's 8-byte fields are 8-aligned */
    switch (e[2] % 8) {
    case 0: fz_put_u32(p, v); break;
    case 1: put_f32(p, floats[v % 16]); break;
    case 2: put_f32(p, ldexpf(get_f32(p), (int)(v % 256) - 128)); break;
    case 3: p[3] ^= 0x80; break;
    case 4: fz_put_u32(p, fz_get_u32(p) + (uint32_t)(int32_t)(int8_t)v); break;
    case 5: if (field + 8 <= ck + size - 4) put_u64(field, u64s[v % 6]); break;
    case 6:
        if (field + 8 <= ck + size - 4) {
            uint64_t bits;
            memcpy(&bits, &doubles[v % 8], 8);
            put_u64(field, bits);
        }
        break;
    default: ck[4] = 1, ck[5] = 0, fz_put_u32(ck + 52, 0); break;
    }
}

static void run_contents(int which, int mode, int selector, const uint8_t *edits, size_t edits_bytes)
{
    const int saver = (selector >> 4) & 3, state = (selector >> 6) & 1;
    const size_t size = template_bytes[saver][state];
    uint8_t *ck = fz_copy(templates[saver][state], size);
    if (ck == NULL) return;
    for (size_t k = 0; k < MAX_EDITS && (k + 1) * EDIT_BYTES <= edits_bytes; ++k)
        edit(ck, size, edits + k * EDIT_BYTES);
    fz_fix_checkpoint_crc(ck, size);
    run(which, mode, ck, size);
    free(ck);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *name;
    int loss;
    image = fm_build(0, &image_bytes, &name, &loss);
    int8_image = int8_in_place_master(&int8_image_bytes);
    const mt_property props[2] = {{"samples", MT_PROPERTY_INT, 0, 1234, 0.0, NULL},
                                  {"device", MT_PROPERTY_STRING, 0, 0, 0.0, "sensor-7"}};
    for (int saver = 0; saver < FM_CK_CONFIGS; ++saver) {
        mt_train_config cfg;
        mt_session *s;
        fm_checkpoint_config(saver, &cfg);
        if (mt_session_init(&s, image, image_bytes, &cfg, arena, sizeof arena) != MT_OK) abort();
        for (unsigned k = 0; k < 3; ++k) {
            fm_fill(s, 2, 5u + k, 0);
            if (mt_session_train_step(s, 2, NULL) != MT_OK) abort();
        }
        for (int state = 0; state < 2; ++state) {
            size_t bytes;
            if (mt_checkpoint_bytes(s, state, props, 2 * state, &bytes) != MT_OK) abort();
            templates[saver][state] = malloc(bytes);
            if (mt_checkpoint_save_buffer(s, state, props, 2 * state, templates[saver][state], bytes,
                                          &template_bytes[saver][state]) != MT_OK)
                abort();
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const int which = data[0] % FM_CK_CONFIGS, mode = (data[0] >> 2) & 3;
    if (data[0] & 0x80) {
        run_contents(which, mode, data[0], data + 1, size - 1);
        return 0;
    }
    uint8_t *ck = fz_copy(data + 1, size - 1);
    if (ck == NULL) return 0;
    if (data[0] & 0x10) {
        run_int8(data[0], ck, size - 1);
        if (fz_fix_checkpoint_crc(ck, size - 1)) run_int8(data[0], ck, size - 1);
    } else {
        run(which, mode, ck, size - 1);
        if (fz_fix_checkpoint_crc(ck, size - 1)) run(which, mode, ck, size - 1);
    }
    free(ck);
    return 0;
}
