/*
 * gen_corpus: writes the fuzz seed corpus from fuzz_models (no hand-made bytes).
 *   <out>/model_image/<model>.mtm          every model image (version 2, as image_builder writes)
 *   <out>/model_image/<model>_v1.mtm       the same as version 1 (no layer bytes), so the
 *                                          fuzzer starts from both versions the reader takes
 *   <out>/session/<model>_<optimizer>.bin  8-byte config prefix + image, a loss that fits
 *   <out>/checkpoint/<saver>_<kind>_as<loader>.bin
 *                                           selector byte + checkpoint of model 0, saved by a
 *                                           session of config <saver>, loaded as <loader>
 *   <out>/checkpoint/<saver>_<kind>_v1_as<saver>.bin
 *                                           the same rewritten as version 1 (no base learning
 *                                           rate), loaded in the guarded or accumulate mode
 *   <out>/model_image/int8_in_place_master.mtm
 *                                           the int8 CNN trained in place with master copies
 *                                           (int8_in_place_util.h)
 *   <out>/checkpoint/ck_int8_master_state_props_as1.bin
 *                                           a version 4 checkpoint of the int8 CNN trained in
 *                                           place (tests/core/int8_in_place_util.h, master
 *                                           copies, momentum), loaded into the same int8
 *                                           session (fuzz_checkpoint's raw selector bit 4)
 *   <out>/checkpoint/contents_<what>.bin    contents mode of fuzz_checkpoint (selector bit 7):
 *                                           a few value edits of the harness's own templates
 * Usage: gen_corpus <out dir>   (tools/run_fuzz.sh --regen-corpus rewrites tests/fuzz/corpus)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_models.h"
#include "fuzz_util.h"
#include "image_builder.h"
#include "int8_in_place_util.h"
#include "microtrain.h"

static _Alignas(16) uint8_t arena[1u << 20];

static void write_file(const char *dir, const char *name, const uint8_t *prefix, size_t prefix_bytes,
                       const uint8_t *data, size_t bytes)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(prefix, 1, prefix_bytes, f) != prefix_bytes || fwrite(data, 1, bytes, f) != bytes) {
        fprintf(stderr, "gen_corpus: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static void make_dir(const char *path)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_corpus: cannot create %s\n", path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus <out dir>\n");
        return 2;
    }
    char dir_img[400], dir_sess[400], dir_ck[400];
    snprintf(dir_img, sizeof dir_img, "%s/model_image", argv[1]);
    snprintf(dir_sess, sizeof dir_sess, "%s/session", argv[1]);
    snprintf(dir_ck, sizeof dir_ck, "%s/checkpoint", argv[1]);
    make_dir(argv[1]);
    make_dir(dir_img);
    make_dir(dir_sess);
    make_dir(dir_ck);

    static const char *opt_names[3] = {"sgd", "adam", "adamw"};
    for (int m = 0; m < FM_NUM_MODELS; ++m) {
        size_t bytes;
        const char *name;
        int loss;
        uint8_t *img = fm_build(m, &bytes, &name, &loss);
        if (mt_model_check(img, bytes, NULL) != MT_OK) {
            fprintf(stderr, "gen_corpus: model %s does not validate\n", name);
            return 1;
        }
        char file[128];
        snprintf(file, sizeof file, "%s.mtm", name);
        write_file(dir_img, file, NULL, 0, img, bytes);
        uint8_t *v1 = malloc(bytes);
        memcpy(v1, img, bytes);
        ib_put_u16(v1, 4, 1);
        for (uint32_t o = 0; o < ib_get_u32(v1, 20); ++o) v1[ib_op_entry(v1, (int)o) + 3] = 0;
        ib_refresh_crc(v1);
        mt_model_info info;
        if (mt_model_check(v1, bytes, &info) != MT_OK || info.version != 1) {
            fprintf(stderr, "gen_corpus: the version 1 image of %s does not validate\n", name);
            return 1;
        }
        snprintf(file, sizeof file, "%s_v1.mtm", name);
        write_file(dir_img, file, NULL, 0, v1, bytes);
        free(v1);
        for (int opt = 0; opt < 3; ++opt) {
            uint8_t prefix[FM_CONFIG_BYTES];
            fm_encode_config(prefix, opt, loss, 1 + opt, opt == 1 ? 2 : -1);
            mt_train_config cfg;
            int32_t rows;
            int poison;
            mt_memory_plan plan;
            mt_status st = fm_plan(prefix, img, bytes, &cfg, &rows, &poison, &plan);
            if (st != MT_OK) {
                fprintf(stderr, "gen_corpus: %s with %s does not plan (%s)\n", name, opt_names[opt],
                        mt_status_str(st));
                return 1;
            }
            snprintf(file, sizeof file, "%s_%s.bin", name, opt_names[opt]);
            write_file(dir_sess, file, prefix, sizeof prefix, img, bytes);
        }
        free(img);
    }

    /* checkpoints of model 0 from each harness configuration, with and without state */
    size_t bytes;
    const char *name;
    int loss;
    uint8_t *img = fm_build(0, &bytes, &name, &loss);
    const mt_property props[3] = {
        {"epoch_loss", MT_PROPERTY_FLOAT, 0, 0, 0.25, NULL},
        {"samples", MT_PROPERTY_INT, 0, 1234, 0.0, NULL},
        {"device", MT_PROPERTY_STRING, 0, 0, 0.0, "sensor-7"},
    };
    for (int saver = 0; saver < FM_CK_CONFIGS; ++saver) {
        mt_train_config cfg;
        fm_checkpoint_config(saver, &cfg);
        mt_session *s;
        if (mt_session_init(&s, img, bytes, &cfg, arena, sizeof arena) != MT_OK) return 1;
        for (int k = 0; k < 2; ++k) {
            fm_fill(s, 2, 3u + (unsigned)k, 0);
            if (mt_session_train_step(s, 2, NULL) != MT_OK) return 1;
        }
        for (int kind = 0; kind < 2; ++kind) { /* 0: weights only, 1: with state + properties */
            static uint8_t buf[65536];
            fz_buffer sink = {buf, 0, sizeof buf};
            if (mt_checkpoint_save(s, kind, props, kind ? 3 : 0, fz_write, &sink) != MT_OK) return 1;
            for (int loader = 0; loader < FM_CK_CONFIGS; ++loader) {
                /* weights only: no state to cross between loaders, and another optimizer is a
                 * mismatch whatever it holds; with state, every state size meets every session */
                if (loader != saver && kind == 0) continue;
                char file[128];
                snprintf(file, sizeof file, "ck%d_%s_as%d.bin", saver, kind ? "state_props" : "weights",
                         loader);
                const uint8_t selector = (uint8_t)loader;
                write_file(dir_ck, file, &selector, 1, sink.data, sink.size);
            }
            /* as version 1 wrote it: offset 52 (the base learning rate) reserved, zero */
            buf[4] = 1, buf[5] = 0;
            fz_put_u32(buf + 52, 0);
            fz_fix_checkpoint_crc(buf, sink.size);
            char file[128];
            snprintf(file, sizeof file, "ck%d_%s_v1_as%d.bin", saver, kind ? "state_props" : "weights", saver);
            const uint8_t selector = (uint8_t)(saver | (1 + kind) << 2); /* guarded, accumulate */
            write_file(dir_ck, file, &selector, 1, sink.data, sink.size);
        }
    }
    free(img);

    /* version 4: an int8 session's checkpoint (typed records, master copies, momentum) */
    {
        size_t qb;
        uint8_t *q = int8_in_place_master(&qb);
        /* the image itself seeds the image reader: TRAINABLE int8 tensors, MASTER flags */
        write_file(dir_img, "int8_in_place_master.mtm", NULL, 0, q, qb);
        mt_train_config cfg;
        mt_train_config_init(&cfg);
        cfg.optimizer = MT_OPTIMIZER_SGD, cfg.momentum = 0.9f, cfg.batch_size = 2, cfg.learning_rate = 0.2f;
        mt_session *s;
        if (mt_session_init(&s, q, qb, &cfg, arena, sizeof arena) != MT_OK) return 1;
        for (int k = 0; k < 2; ++k) {
            fm_fill(s, 2, 7u + (unsigned)k, 0);
            if (mt_session_train_step(s, 2, NULL) != MT_OK) return 1;
        }
        static uint8_t buf[65536];
        fz_buffer sink = {buf, 0, sizeof buf};
        if (mt_checkpoint_save(s, 1, props, 3, fz_write, &sink) != MT_OK || buf[4] != 4) return 1;
        const uint8_t selector = 1 | 1 << 4; /* raw, into the int8 session: SGD + momentum */
        write_file(dir_ck, "ck_int8_master_state_props_as1.bin", &selector, 1, sink.data, sink.size);
        free(q);
    }

    /* contents mode: selector 0x80 | state << 6 | saver << 4 | mode << 2 | loader, then edits of
     * 7 bytes (u16 word position from offset 20, u8 kind, u32 value; fuzz_checkpoint.c) */
    static const struct {
        const char *what;
        uint8_t selector;
        uint8_t edit[7]; /* all zero: no edit */
    } seeds[] = {
        {"adam_as_is", 0x80 | 1 << 6 | 2 << 4 | 0 << 2 | 2, {0}},
        {"sgd_momentum_guarded", 0x80 | 1 << 6 | 1 << 4 | 1 << 2 | 1, {0}},
        {"nan_weight", 0x80 | 1 << 6 | 3 << 4 | 2 << 2 | 3, {17, 0, 1, 0, 0, 0, 0}},          /* W1[0] = NaN */
        {"huge_rate_adam", 0x80 | 1 << 6 | 2 << 4 | 0 << 2 | 2, {7, 0, 1, 15, 0, 0, 0}},      /* lr = 3e38 */
        {"huge_rate_sgd", 0x80 | 0 << 6 | 0 << 4 | 3 << 2 | 0, {7, 0, 1, 4, 0, 0, 0}},        /* lr = FLT_MAX */
        {"negative_v", 0x80 | 1 << 6 | 2 << 4 | 1 << 2 | 2, {41, 0, 1, 14, 0, 0, 0}},         /* v[0] = -1 */
        {"beta1_power_zero", 0x80 | 1 << 6 | 2 << 4 | 2 << 2 | 2, {9, 0, 6, 0, 0, 0, 0}},     /* β1^t = 0 */
        {"negative_step", 0x80 | 0 << 6 | 1 << 4 | 0 << 2 | 1, {3, 0, 5, 0, 0, 0, 0}},        /* step = -1 */
        {"version_1", 0x80 | 1 << 6 | 3 << 4 | 1 << 2 | 3, {0, 0, 7, 0, 0, 0, 0}},
    };
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; ++k) {
        char file[128];
        snprintf(file, sizeof file, "contents_%s.bin", seeds[k].what);
        const int none = seeds[k].edit[2] == 0 && seeds[k].edit[0] == 0;
        write_file(dir_ck, file, &seeds[k].selector, 1, seeds[k].edit, none ? 0 : sizeof seeds[k].edit);
    }
    printf("gen_corpus: wrote %s\n", argv[1]);
    return 0;
}
