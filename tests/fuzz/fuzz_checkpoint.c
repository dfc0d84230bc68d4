/*
 * libFuzzer harness: the checkpoint reader.
 * Input: one selector byte, then the checkpoint bytes. The selector picks one of four
 * sessions of the fixed model 0 (SGD, SGD + momentum, Adam, AdamW: 0, 1 and 2 optimizer
 * state arrays), so stored state of every size meets every session. Each input is loaded
 * through a memory read callback into a fresh session: as given, and with the CRC trailer
 * recomputed (so the fuzzer gets past the CRC to the structure checks).
 * Properties: no crash or sanitizer report; a refused checkpoint leaves the arena byte for
 * byte unchanged (the documented "validated before anything is written"); after a successful
 * load a train step runs and the session saves a checkpoint that loads back.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_models.h"
#include "fuzz_util.h"
#include "microtrain.h"

#define ARENA_BYTES (64u * 1024u)

static uint8_t *image;
static size_t image_bytes;
static _Alignas(16) uint8_t arena[ARENA_BYTES];
static _Alignas(16) uint8_t before[ARENA_BYTES];

static void run(int which, uint8_t *ck, size_t size)
{
    mt_train_config cfg;
    fm_checkpoint_config(which, &cfg);
    mt_session *s;
    if (mt_session_init(&s, image, image_bytes, &cfg, arena, sizeof arena) != MT_OK) abort();
    mt_memory_plan plan;
    mt_session_plan(s, &plan);
    memcpy(before, arena, plan.total_bytes);
    fz_buffer src = {ck, size, size};
    mt_status st = mt_checkpoint_load(s, size, fz_read, &src, fz_property, NULL);
    if (st != MT_OK) {
        if (st != MT_ERR_BAD_CHECKPOINT && st != MT_ERR_CHECKPOINT_MISMATCH) abort();
        if (memcmp(before, arena, plan.total_bytes) != 0) abort(); /* refused: nothing written */
        return;
    }
    /* loaded: the session must still work, whatever finite or non-finite values it holds */
    fm_fill(s, 2, 99u, 0);
    float loss;
    st = mt_session_train_step(s, 2, &loss);
    if (st != MT_OK && st != MT_ERR_NUMERIC) abort();
    static uint8_t out[ARENA_BYTES];
    fz_buffer sink = {out, 0, sizeof out};
    size_t bytes;
    if (mt_checkpoint_bytes(s, 1, NULL, 0, &bytes) != MT_OK) abort();
    if (mt_checkpoint_save(s, 1, NULL, 0, fz_write, &sink) != MT_OK || sink.size != bytes) abort();
    if (mt_checkpoint_load(s, sink.size, fz_read, &sink, NULL, NULL) != MT_OK) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *name;
    int loss;
    image = fm_build(0, &image_bytes, &name, &loss);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const int which = data[0] % FM_CK_CONFIGS;
    uint8_t *ck = fz_copy(data + 1, size - 1);
    if (ck == NULL) return 0;
    run(which, ck, size - 1);
    if (fz_fix_checkpoint_crc(ck, size - 1)) run(which, ck, size - 1);
    free(ck);
    return 0;
}
