/*
 * The bad-input matrix (see also test_api_session.c and test_api_checkpoint.c): every public
 * C function (microtrain.h and microtrain_storage.h) with NULL pointers, zero and huge sizes
 * and counts, out-of-range positions and values, calls in the wrong state, misaligned arenas
 * and images, and arenas too small by one byte. Every call must return its documented status,
 * and the 64 guard bytes on each side of the arena must be intact after every call (a write
 * out of bounds). Run under ASan + UBSan by tools/run_sanitizers.sh, where an over-read fails
 * too.
 *
 * This program: the library's queries (status names, ABI, struct sizes, op names), the model
 * queries, and the configuration values mt_plan() and mt_model_diagnose() refuse.
 */
#include "api_matrix_util.h"

/* ---- the matrix: library, model and configuration ---------------------------------------- */

static void test_library_queries(void)
{
    for (int st = -40; st <= 40; ++st) CHECK(mt_status_str(st) != NULL);
    CHECK(mt_status_str(INT_MIN) != NULL);
    CHECK(mt_status_str(INT_MAX) != NULL);
    CHECK_EQ_INT(mt_abi_version(), MT_ABI_VERSION);
    for (int w = 0; w <= 8; ++w) CHECK(mt_struct_size(w) > 0);
    CHECK_EQ_INT(mt_struct_size(-1), 0);
    CHECK_EQ_INT(mt_struct_size(9), 0);
    CHECK_EQ_INT(mt_struct_size(INT_MAX), 0);
    CHECK_EQ_INT(mt_struct_size(INT_MIN), 0);
    mt_train_config_init(NULL); /* documented: ignored */
}

/* What the per-entry model queries (mt_model_tensor, mt_model_op) refuse alike: no image, no
 * output, an image cut short (BAD_MODEL), and each index of the array `bad` (BAD_ARGUMENT). */
#define CHECK_ENTRY_QUERY_REFUSALS(query, out, bad)                                          \
    do {                                                                                     \
        CALL(query(NULL, image_bytes, 0, &(out)), MT_ERR_BAD_ARGUMENT);                      \
        CALL(query(image, image_bytes, 0, NULL), MT_ERR_BAD_ARGUMENT);                       \
        CALL(query(image, 10, 0, &(out)), MT_ERR_BAD_MODEL);                                 \
        for (size_t k = 0; k < sizeof(bad) / sizeof *(bad); ++k)                             \
            CALL(query(image, image_bytes, (bad)[k], &(out)), MT_ERR_BAD_ARGUMENT);          \
    } while (0)

static void test_model_queries(void)
{
    mt_model_info info;
    mt_tensor_info t;
    int32_t index;
    CALL(mt_model_check(NULL, image_bytes, &info), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_check(image, image_bytes, NULL), MT_OK);
    CALL2(mt_model_check(image, 0, &info), MT_ERR_BAD_MODEL, MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_check(image, 63, &info), MT_ERR_BAD_MODEL);
    CALL(mt_model_check(image, image_bytes - 1, &info), MT_ERR_BAD_MODEL);
    CALL(mt_model_check(image, SIZE_MAX, &info), MT_OK); /* the header's own size governs */
    const int32_t bad_index[] = {-1, 8, 1000, INT32_MAX, INT32_MIN};
    CHECK_ENTRY_QUERY_REFUSALS(mt_model_tensor, t, bad_index);
    CALL(mt_model_io(NULL, image_bytes, 0, 0, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 0, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 2, 0, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, -1, 0, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 0, 1, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 1, -1, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 1, INT32_MAX, &index), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_io(image, image_bytes, 1, 0, &index), MT_OK);
    mt_op_info op;
    const int32_t bad_op[] = {-1, 3, 256, INT32_MAX, INT32_MIN};
    CHECK_ENTRY_QUERY_REFUSALS(mt_model_op, op, bad_op);
    CALL(mt_model_op(image, image_bytes, 2, &op), MT_OK);
    CALL(mt_model_op(image + 2, image_bytes, 0, &op), MT_ERR_BAD_ARGUMENT); /* misaligned */
    for (int32_t type = -2; type <= 300; ++type) {
        const char *name = mt_op_name(type);
        CHECK((name != NULL) == ((type >= MT_OP_DENSE && type <= MT_OP_TRANSPOSE) ||
                                 (type >= MT_OP_QUANTIZE && type <= MT_OP_PAD_S8)));
        CHECK_EQ_INT(mt_op_built(type), name != NULL);
    }
    CHECK(mt_op_name(INT32_MIN) == NULL && mt_op_name(INT32_MAX) == NULL);
    CHECK_EQ_INT(mt_op_built(INT32_MIN), 0);
    CHECK_EQ_INT(mt_op_built(INT32_MAX), 0);
}

/* mt_model_tensors / mt_model_ops and their single queries, over build_model()'s image */
typedef mt_status (*range_query)(int32_t first, int32_t count, void *out);
typedef mt_status (*single_query)(int32_t index, void *out);
static mt_status tensor_range(int32_t first, int32_t count, void *out)
{
    return mt_model_tensors(image, image_bytes, first, count, (mt_tensor_info *)out);
}
static mt_status tensor_single(int32_t index, void *out)
{
    return mt_model_tensor(image, image_bytes, index, (mt_tensor_info *)out);
}
static mt_status op_range(int32_t first, int32_t count, void *out)
{
    return mt_model_ops(image, image_bytes, first, count, (mt_op_info *)out);
}
static mt_status op_single(int32_t index, void *out)
{
    return mt_model_op(image, image_bytes, index, (mt_op_info *)out);
}

/* every range of a table of n entries of `entry` bytes equals the single queries entry by
 * entry, and nothing past count is written */
static void check_ranges(int32_t n, size_t entry, range_query range, single_query single)
{
    static int32_t table[9 * 16], one[16]; /* int32 words: the structs' alignment */
    const unsigned char *bytes = (const unsigned char *)table;
    CHECK((size_t)(n + 1) * entry <= sizeof table && entry <= sizeof one);
    for (int32_t first = 0; first <= n; ++first)
        for (int32_t count = 0; first + count <= n; ++count) {
            memset(table, 0xA5, sizeof table);
            CALL(range(first, count, table), MT_OK);
            for (int32_t k = 0; k < count; ++k) {
                CALL(single(first + k, one), MT_OK);
                CHECK(memcmp(bytes + (size_t)k * entry, one, entry) == 0);
            }
            for (size_t b = (size_t)count * entry; b < (size_t)(count + 1) * entry; ++b) CHECK(bytes[b] == 0xA5);
        }
}

/* the ranges as the single queries give them, and the bad ranges, pointers and images refused */
static void test_model_ranges(void)
{
    enum { T = 8, O = 3 }; /* build_model()'s tables */
    check_ranges(T, sizeof(mt_tensor_info), tensor_range, tensor_single);
    check_ranges(O, sizeof(mt_op_info), op_range, op_single);
    mt_tensor_info tensors[T + 1];
    mt_op_info ops[O + 1];
    const int32_t bad[][2] = {{-1, 1}, {0, -1}, {0, T + 1}, {1, T}, {T, 1}, {T + 1, 0},
                              {INT32_MAX, 1}, {1, INT32_MAX}, {INT32_MIN, 0}, {0, INT32_MIN}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k)
        CALL(mt_model_tensors(image, image_bytes, bad[k][0], bad[k][1], tensors), MT_ERR_BAD_ARGUMENT);
    const int32_t bad_ops[][2] = {{-1, 1}, {0, O + 1}, {O, 1}, {2, 2}, {INT32_MAX, INT32_MAX}};
    for (size_t k = 0; k < sizeof bad_ops / sizeof *bad_ops; ++k)
        CALL(mt_model_ops(image, image_bytes, bad_ops[k][0], bad_ops[k][1], ops), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_tensors(image, image_bytes, 0, 1, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_ops(image, image_bytes, 0, 1, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_tensors(NULL, image_bytes, 0, 1, tensors), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_ops(NULL, image_bytes, 0, 1, ops), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_tensors(image, 10, 0, 1, tensors), MT_ERR_BAD_MODEL);
    CALL(mt_model_ops(image, 10, 0, 1, ops), MT_ERR_BAD_MODEL);
    CALL(mt_model_tensors(image + 2, image_bytes, 0, 1, tensors), MT_ERR_BAD_ARGUMENT); /* misaligned */
    CALL(mt_model_ops(image + 2, image_bytes, 0, 1, ops), MT_ERR_BAD_ARGUMENT);
}

static void test_config_values(void)
{
    mt_memory_plan plan;
    mt_train_config cfg;
    config(&cfg);
    CALL(mt_plan(NULL, image_bytes, &cfg, &plan), MT_ERR_BAD_ARGUMENT);
    CALL(mt_plan(image, image_bytes, NULL, &plan), MT_ERR_BAD_ARGUMENT);
    mt_error_detail detail;
    CALL(mt_model_diagnose(image, image_bytes, &cfg, NULL), MT_ERR_BAD_ARGUMENT);
    CALL(mt_model_diagnose(NULL, image_bytes, &cfg, &detail), MT_ERR_BAD_ARGUMENT);
    CHECK(detail.status == MT_ERR_BAD_ARGUMENT && detail.op_index == -1 && detail.tensor_index == -1);
    CALL(mt_model_diagnose(image, 10, NULL, &detail), MT_ERR_BAD_MODEL);
    CALL(mt_model_diagnose(image, SIZE_MAX, &cfg, &detail), MT_OK);
    CALL(mt_model_diagnose(image + 1, image_bytes, &cfg, &detail), MT_ERR_BAD_ARGUMENT);
    CALL(mt_plan(image, image_bytes, &cfg, NULL), MT_ERR_BAD_ARGUMENT);
#define BAD_FIELD(field, value)                                                              \
    do {                                                                                     \
        config(&cfg);                                                                        \
        cfg.field = value;                                                                   \
        CALL(mt_plan(image, image_bytes, &cfg, &plan), MT_ERR_BAD_ARGUMENT);                 \
    } while (0)
    BAD_FIELD(optimizer, -1);
    BAD_FIELD(optimizer, 3);
    BAD_FIELD(optimizer, INT32_MAX);
    BAD_FIELD(loss, -1);
    BAD_FIELD(loss, 5);
    BAD_FIELD(reduction, 2);
    BAD_FIELD(reduction, -1);
    BAD_FIELD(batch_size, 0);
    BAD_FIELD(batch_size, -1);
    BAD_FIELD(batch_size, 65536);
    BAD_FIELD(batch_size, INT32_MAX);
    BAD_FIELD(num_trainable_ops, -2);
    BAD_FIELD(num_trainable_ops, INT32_MIN);
    BAD_FIELD(biases_only, 2);
    BAD_FIELD(biases_only, -1);
    BAD_FIELD(learning_rate, 0.0f);
    BAD_FIELD(learning_rate, -0.1f);
    BAD_FIELD(learning_rate, NAN);
    BAD_FIELD(learning_rate, INFINITY);
    BAD_FIELD(beta1, 1.0f);
    BAD_FIELD(beta1, -0.1f);
    BAD_FIELD(beta1, NAN);
    BAD_FIELD(beta2, 1.0f);
    BAD_FIELD(beta2, INFINITY);
    BAD_FIELD(epsilon, 0.0f);
    BAD_FIELD(epsilon, -1.0f);
    BAD_FIELD(epsilon, NAN);
    BAD_FIELD(momentum, 1.0f);
    BAD_FIELD(momentum, -0.5f);
    BAD_FIELD(weight_decay, -1.0f);
    BAD_FIELD(weight_decay, NAN);
    BAD_FIELD(accumulate_gradients, 2);
    BAD_FIELD(accumulate_gradients, -1);
#undef BAD_FIELD
    /* a huge num_trainable_ops means "all": valid */
    config(&cfg);
    cfg.num_trainable_ops = INT32_MAX;
    CALL(mt_plan(image, image_bytes, &cfg, &plan), MT_OK);
}

int main(void)
{
    build_model();
    test_library_queries();
    test_model_queries();
    test_model_ranges();
    test_config_values();
    free(image);
    return MT_TEST_END();
}
