/*
 * The bad-input matrix (see also test_api_session.c and test_api_checkpoint.c): every public
 * C function (microtrain.h and microtrain_storage.h) with NULL pointers, zero and huge sizes
 * and counts, out-of-range positions and values, calls in the wrong state, misaligned arenas
 * and images, and arenas too small by one byte. Every call must return its documented status,
 * and the 64 guard bytes on each side of the arena must be intact after every call (a write
 * out of bounds). Run under ASan + UBSan by tools/run_sanitizers.sh, where an over-read fails
 * too.
 *
 * This program: the checkpoint and export calls (stream and buffer forms) and
 * microtrain_storage.h's.
 */
#include "api_matrix_util.h"

/* ---- the matrix: checkpoints, export, storage ---------------------------------------------- */

static mt_status positive_status(void *user, const void *data, size_t bytes)
{
    (void)user, (void)data, (void)bytes;
    return (mt_status)5; /* not a status: must become MT_ERR_IO */
}

static mt_status positive_read(void *user, size_t offset, void *data, size_t bytes)
{
    (void)user, (void)offset, (void)data, (void)bytes;
    return (mt_status)5;
}

static void test_checkpoint_calls(void)
{
    mt_train_config cfg;
    config(&cfg);
    guarded g;
    mt_session *s = guarded_session(&cfg, &g);
    static mem m;
    size_t bytes;
    CALL(mt_checkpoint_bytes(s, 1, NULL, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 2, NULL, 0, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, -1, NULL, 0, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, -1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, 1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, INT32_MAX, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_bytes(s, 1, NULL, INT32_MIN, &bytes), MT_ERR_BAD_ARGUMENT);

    char long_name[80], long_text[300];
    memset(long_name, 'n', sizeof long_name);
    long_name[MT_PROPERTY_MAX_NAME + 1] = '\0';
    memset(long_text, 't', sizeof long_text);
    long_text[MT_PROPERTY_MAX_STRING + 1] = '\0';
    const mt_property bad[] = {
        {NULL, MT_PROPERTY_INT, 0, 1, 0.0, NULL},
        {"", MT_PROPERTY_INT, 0, 1, 0.0, NULL},
        {long_name, MT_PROPERTY_INT, 0, 1, 0.0, NULL},
        {"t", 0, 0, 1, 0.0, NULL},
        {"t", 4, 0, 1, 0.0, NULL},
        {"t", -1, 0, 1, 0.0, NULL},
        {"t", MT_PROPERTY_STRING, 0, 0, 0.0, NULL},
        {"t", MT_PROPERTY_STRING, 0, 0, 0.0, long_text},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        memset(&m, 0, sizeof m);
        CALL(mt_checkpoint_bytes(s, 1, &bad[k], 1, &bytes), MT_ERR_BAD_ARGUMENT);
        CALL(mt_checkpoint_save(s, 1, &bad[k], 1, mem_write, &m), MT_ERR_BAD_ARGUMENT);
        CHECK_EQ_INT(m.size, 0); /* refused before a byte is written */
    }
    memset(&m, 0, sizeof m);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, NULL, &m), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, positive_status, NULL), MT_ERR_IO);
    CALL(mt_checkpoint_save(s, 1, NULL, 0, mem_write, &m), MT_OK);
    CALL(mt_checkpoint_load(s, m.size, NULL, &m, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load(s, 0, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, 3, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, m.size - 1, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, SIZE_MAX, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, (size_t)UINT32_MAX, mem_read, &m, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load(s, m.size, positive_read, NULL, NULL, NULL), MT_ERR_IO);
    m.fail_with = MT_ERR_IO;
    CALL(mt_checkpoint_load(s, m.size, mem_read, &m, NULL, NULL), MT_ERR_IO);
    m.fail_with = MT_OK;
    CALL(mt_checkpoint_load(s, m.size, mem_read, &m, NULL, NULL), MT_OK);
    CALL(mt_session_export_image(s, NULL, &m), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image(s, positive_status, NULL), MT_ERR_IO);
    /* the buffer forms: NULL, short, overlapping the arena; then a round trip */
    static uint8_t ck[8192];
    float rate;
    CALL(mt_session_get_base_learning_rate(s, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_get_base_learning_rate(s, &rate), MT_OK);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, NULL, sizeof ck, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, ck, m.size - 1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, ck, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 2, NULL, 0, ck, sizeof ck, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, g.arena + g.bytes - 8, SIZE_MAX, &bytes),
         MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_save_buffer(s, 1, NULL, 0, ck, sizeof ck, NULL), MT_OK);
    CALL(mt_checkpoint_load_buffer(s, NULL, m.size, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load_buffer(s, g.arena, m.size, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load_buffer(s, ck, 0, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_checkpoint_load_buffer(s, ck, m.size - 1, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    /* a size past 4 GiB: too big for the format, or (by where the arena lies) reaching into it */
    CALL2(mt_checkpoint_load_buffer(s, ck, SIZE_MAX / 2, NULL, NULL), MT_ERR_BAD_CHECKPOINT, MT_ERR_BAD_ARGUMENT);
    CALL(mt_checkpoint_load_buffer(s, ck, m.size, NULL, NULL), MT_OK);
    CALL(mt_session_export_image_buffer(s, NULL, sizeof ck, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image_buffer(s, ck, image_bytes - 1, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image_buffer(s, image, image_bytes, &bytes), MT_ERR_BAD_ARGUMENT);
    CALL(mt_session_export_image_buffer(s, ck, image_bytes, NULL), MT_OK);
    current = NULL;
    free(g.raw);
}

/* microtrain_storage.h: argument checks (the power-loss behaviour is test_storage.c) */
static mt_status no_erase(void *u, size_t o)
{
    (void)u, (void)o;
    return MT_ERR_IO;
}

static mt_status no_program(void *u, size_t o, const void *d, size_t n)
{
    (void)u, (void)o, (void)d, (void)n;
    return MT_ERR_IO;
}

static mt_status blank_read(void *u, size_t o, void *d, size_t n)
{
    (void)u, (void)o;
    memset(d, 0xFF, n);
    return MT_OK;
}

static void test_storage_calls(void)
{
    mt_train_config cfg;
    config(&cfg);
    guarded g;
    mt_session *s = guarded_session(&cfg, &g);
    mt_flash fl = {no_erase, no_program, blank_read, NULL, 256, 4, {0, 4096}, 4096};
    mt_storage_info info;
    CALL(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, -1);
    CALL(mt_storage_load(s, &fl, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CALL(mt_storage_save(s, 1, NULL, 0, &fl), MT_ERR_IO); /* the erase fails */
    CALL(mt_storage_save(s, 1, NULL, -1, &fl), MT_ERR_BAD_ARGUMENT);
    CALL(mt_storage_save(s, 3, NULL, 0, &fl), MT_ERR_BAD_ARGUMENT);
    memset(g.arena, 0, g.bytes);
    CALL(mt_storage_save(s, 1, NULL, 0, &fl), MT_ERR_BAD_ARGUMENT); /* not a session any more */
    fl.slot_bytes = SIZE_MAX;
    CALL(mt_storage_scan(&fl, &info), MT_ERR_BAD_ARGUMENT);
    fl.slot_bytes = 0;
    CALL(mt_storage_scan(&fl, &info), MT_ERR_BAD_ARGUMENT);
    current = NULL;
    free(g.raw);
}

int main(void)
{
    build_model();
    test_checkpoint_calls();
    test_storage_calls();
    free(image);
    return MT_TEST_END();
}
