/*
 * Steps on rows the caller holds (mt_session_train_step_rows, _eval_step_rows, _infer_rows):
 * every result bit for bit that of copying the rows into the session's input buffer and
 * stepping, on models whose first op is each kind the kernels read an input with (Dense,
 * Conv2D, Transpose, ReLU, Reshape, Add of two inputs), at batch sizes where x86
 * takes its vector and sparse paths.
 *
 * The rows sit at the end of read-only pages followed by a page nothing may touch (Linux), so
 * a kernel that reads past row n - 1 or writes the input faults. The session's own input
 * buffer holds NaN meanwhile, so a step that read it instead would not match.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <string.h>

#include "guarded_session_util.h"
#include "model_zoo.h"
#include "session.h" /* the tensor table: its input pointers set back after each call */

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* ---- rows fenced by a page without access --------------------------------------------------- */

typedef struct fenced {
    uint8_t *map;
    size_t map_bytes;
    float *rows;
} fenced;

/* bytes of src at the end of read-only memory that a PROT_NONE page follows */
static const float *fence_rows(fenced *f, const void *src, size_t bytes)
{
#if defined(__linux__)
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), data = (bytes + page - 1) / page * page;
    f->map_bytes = data + page;
    f->map = mmap(NULL, f->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!CHECK(f->map != MAP_FAILED)) exit(1);
    f->rows = (float *)(void *)(f->map + data - bytes);
    memcpy(f->rows, src, bytes);
    CHECK(mprotect(f->map, data, PROT_READ) == 0);
    CHECK(mprotect(f->map + data, page, PROT_NONE) == 0);
#else
    f->map_bytes = bytes;
    f->map = malloc(bytes + MT_ARENA_ALIGN);
    f->rows = (float *)(void *)(f->map + (MT_ARENA_ALIGN - (uintptr_t)f->map % MT_ARENA_ALIGN) % MT_ARENA_ALIGN);
    memcpy(f->rows, src, bytes);
#endif
    return f->rows;
}

static void unfence(fenced *f)
{
#if defined(__linux__)
    munmap(f->map, f->map_bytes);
#else
    free(f->map);
#endif
}

/* ---- the models --------------------------------------------------------------------------- */

typedef struct model {
    const char *name;
    uint8_t *img;
    size_t bytes;
    int num_inputs, in[2], classes, batch;
} model;

static int tensor(ib_model *m, int flags, int ndim, int32_t d0, int32_t d1, int32_t d2)
{
    const int32_t d[3] = {d0, d1, d2};
    static float w[IB_MAX_FLOATS];
    int count = 1;
    for (int i = 0; i < ndim; i++) count *= d[i];
    for (int i = 0; i < count && (flags & MT_TENSOR_CONST); i++) w[i] = mt_test_uniform(-0.5f, 0.5f);
    return ib_tensor(m, MT_DTYPE_F32, flags, ndim, d, w);
}

/* first(x...) -> h[features] -> Dense(classes) -> Softmax: the head every small model shares */
static uint8_t *with_head(ib_model *m, int h, int features, int classes, size_t *bytes)
{
    const int w = tensor(m, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, 2, classes, features, 0);
    const int b = tensor(m, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, 1, classes, 0, 0);
    const int z = tensor(m, 0, 1, classes, 0, 0), p = tensor(m, MT_TENSOR_OUTPUT, 1, classes, 0, 0);
    const int dense_in[3] = {h, w, b};
    ib_op(m, MT_OP_DENSE, 3, dense_in, 1, &z);
    ib_op(m, MT_OP_SOFTMAX, 1, &z, 1, &p);
    ib_output(m, p);
    return ib_build(m, bytes);
}

/* x (16 values: [16], or [4, 4] when x_ndim is 2) -> op (ReLU, or Reshape to [16]) -> Dense 10
 * -> Softmax */
static uint8_t *unary_first(int op, int x_ndim, unsigned seed, size_t *bytes)
{
    static ib_model m;
    ib_init(&m);
    mt_test_seed(seed);
    const int x = x_ndim == 1 ? tensor(&m, MT_TENSOR_INPUT, 1, 16, 0, 0) : tensor(&m, MT_TENSOR_INPUT, 2, 4, 4, 0);
    const int h = tensor(&m, 0, 1, 16, 0, 0);
    ib_input(&m, x);
    ib_op(&m, op, 1, &x, 1, &h);
    return with_head(&m, h, 16, 10, bytes);
}

/* a[8], b[8] -> Add -> Dense 10 -> Softmax */
static uint8_t *two_inputs(size_t *bytes)
{
    static ib_model m;
    ib_init(&m);
    mt_test_seed(73u);
    const int a = tensor(&m, MT_TENSOR_INPUT, 1, 8, 0, 0), b = tensor(&m, MT_TENSOR_INPUT, 1, 8, 0, 0);
    const int h = tensor(&m, 0, 1, 8, 0, 0), ab[2] = {a, b};
    ib_input(&m, a), ib_input(&m, b);
    ib_op(&m, MT_OP_ADD, 2, ab, 1, &h);
    return with_head(&m, h, 8, 10, bytes);
}

static model mlp(int in, int hidden, int classes, int batch, const char *name)
{
    ib_mlp_spec spec;
    model md = {name, NULL, 0, 1, {in, 0}, classes, batch};
    ib_mlp_defaults(&spec);
    spec.in = in, spec.hidden = hidden, spec.out = classes;
    spec.hidden_act = MT_OP_RELU, spec.out_act = MT_OP_SOFTMAX;
    md.img = ib_build_mlp(&spec, &md.bytes);
    return md;
}

/* ---- one model: stepping on the rows where they are against copying them ------------------ */

static void poison_inputs(mt_session *s, int num_inputs)
{
    for (int k = 0; k < num_inputs; k++) {
        float *x;
        int32_t count;
        CHECK_STATUS(mt_session_input(s, k, &x, &count), MT_OK);
        for (int32_t i = 0; i < count; i++) x[i] = NAN;
    }
}

static int same_outputs(mt_session *a, mt_session *b, int n, int classes)
{
    const float *ya, *yb;
    int32_t count;
    mt_session_output(a, 0, &ya, &count), mt_session_output(b, 0, &yb, &count);
    return memcmp(ya, yb, sizeof(float) * (size_t)n * (size_t)classes) == 0;
}

/* input k's buffer holds the count floats of rows (1), or NaN (0), or something else (-1) */
static int input_holds(mt_session *s, int k, const float *rows, int count)
{
    float *x;
    int32_t size;
    mt_session_input(s, k, &x, &size);
    if (memcmp(x, rows, sizeof(float) * (size_t)count) == 0) return 1;
    for (int i = 0; i < count; i++)
        if (!isnan(x[i])) return -1;
    return 0;
}

static int pointers_restored(const mt_session *s)
{
    for (uint32_t k = 0; k < s->img.num_inputs; ++k) {
        const mt_tensor_rt *t = &s->tensors[mt_image_io(&s->img, 0, k)];
        if (t->data != t->mutable_data) return 0;
    }
    return 1;
}

/* Session a copies each batch into its input buffer; session b steps on the same rows,
 * fenced. own: input k of b takes b's own buffer (a NULL entry), filled like a's. */
static void check_model(const model *md, int optimizer, int own)
{
    mt_train_config cfg;
    guarded a, b;
    config(&cfg, optimizer, MT_LOSS_CATEGORICAL_CROSSENTROPY, md->batch);
    CHECK_STATUS(open_guarded(&a, md->img, md->bytes, &cfg), MT_OK);
    CHECK_STATUS(open_guarded(&b, md->img, md->bytes, &cfg), MT_OK);
    const int B = md->batch, ns[] = {B, 1, B > 2 ? B - 1 : 1, 3 <= B ? 3 : B, B};
    for (int step = 0; step < 5; step++) {
        const int n = ns[step];
        fenced f[2];
        const float *rows[2] = {NULL, NULL};
        poison_inputs(b.s, md->num_inputs);
        for (int k = 0; k < md->num_inputs; k++) {
            float *xa, *xb;
            int32_t count;
            mt_test_seed(100u * (unsigned)step + (unsigned)k);
            mt_session_input(a.s, k, &xa, &count), mt_session_input(b.s, k, &xb, &count);
            for (int i = 0; i < n * md->in[k]; i++) xa[i] = mt_test_uniform(-2.f, 2.f);
            if (k == own)
                memcpy(xb, xa, sizeof(float) * (size_t)n * (size_t)md->in[k]);
            else
                rows[k] = fence_rows(&f[k], xa, sizeof(float) * (size_t)n * (size_t)md->in[k]);
        }
        fill_targets(a.s, n, md->classes, 0, 500u + (unsigned)step);
        fill_targets(b.s, n, md->classes, 0, 500u + (unsigned)step);

        float la = 1.f, lb = 2.f;
        CHECK_STATUS(mt_session_train_step(a.s, n, &la), MT_OK);
        CHECK_STATUS(mt_session_train_step_rows(b.s, n, rows, &lb), MT_OK);
        CHECK_BITS_EQ(la, lb);
        CHECK(same_params(a.s, b.s));
        CHECK(pointers_restored(b.s));

        CHECK_STATUS(mt_session_eval_step(a.s, n, &la), MT_OK);
        CHECK_STATUS(mt_session_eval_step_rows(b.s, n, rows, &lb), MT_OK);
        CHECK_BITS_EQ(la, lb);
        CHECK(same_outputs(a.s, b.s, n, md->classes));

        CHECK_STATUS(mt_session_infer(a.s, n), MT_OK);
        CHECK_STATUS(mt_session_infer_rows(b.s, n, rows), MT_OK);
        CHECK(same_outputs(a.s, b.s, n, md->classes));
        CHECK(pointers_restored(b.s));
        for (int k = 0; k < md->num_inputs; k++) {
            if (k == own) continue;
            /* aligned rows were read where they are: b's buffer still holds its NaN; the others
             * were copied into it */
            CHECK(input_holds(b.s, k, rows[k], n * md->in[k]) == ((uintptr_t)rows[k] % MT_ARENA_ALIGN != 0));
            unfence(&f[k]);
        }
    }
    CHECK(same_params(a.s, b.s));
    CHECK(guards_intact(&a) && guards_intact(&b));
    free(a.block), free(b.block);
}

/* ---- rows the session copies: inside the arena, not aligned ---------------------------------- */

static void check_copied_rows(void)
{
    const model md = mlp(256, 24, 10, 32, "MLP 256-24-10");
    mt_train_config cfg;
    guarded a, b;
    float la = 1.f, lb = 2.f, *xa, *xb;
    int32_t count;
    config(&cfg, MT_OPTIMIZER_SGD, MT_LOSS_CATEGORICAL_CROSSENTROPY, md.batch);
    CHECK_STATUS(open_guarded(&a, md.img, md.bytes, &cfg), MT_OK);
    CHECK_STATUS(open_guarded(&b, md.img, md.bytes, &cfg), MT_OK);
    mt_session_input(a.s, 0, &xa, &count), mt_session_input(b.s, 0, &xb, &count);
    fill_targets(a.s, 32, 10, 0, 9u), fill_targets(b.s, 32, 10, 0, 9u);

    /* b's own input buffer, passed explicitly */
    const float *own[1] = {xb};
    fill_inputs(a.s, 32, 256, 10u), fill_inputs(b.s, 32, 256, 10u);
    CHECK_STATUS(mt_session_train_step(a.s, 32, &la), MT_OK);
    CHECK_STATUS(mt_session_train_step_rows(b.s, 32, own, &lb), MT_OK);
    CHECK_BITS_EQ(la, lb);
    CHECK(same_params(a.s, b.s));

    /* the gradient of b's first weights [24, 256] as four rows of b: the weight gradient's
     * kernel writes it while it reads the rows, so they are copied first; a gets the bytes
     * (last step's gradient, not zero) */
    const mt_tensor_rt *w1 = &b.s->tensors[1];
    CHECK(w1->trained && w1->count == 24 * 256 && w1->grad != NULL);
    memcpy(xa, w1->grad, sizeof(float) * 4 * 256);
    const float *inside[1] = {w1->grad};
    CHECK_STATUS(mt_session_train_step(a.s, 4, &la), MT_OK);
    CHECK_STATUS(mt_session_train_step_rows(b.s, 4, inside, &lb), MT_OK);
    CHECK_BITS_EQ(la, lb);
    CHECK(same_params(a.s, b.s));

    /* rows 4 bytes past an aligned address: copied (kernels may assume the arena's alignment) */
    float *block = malloc(sizeof(float) * (32 * 256 + 8));
    float *odd = (float *)(void *)((uint8_t *)block + (MT_ARENA_ALIGN - (uintptr_t)block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN + 4);
    fill_inputs(a.s, 32, 256, 11u);
    memcpy(odd, xa, sizeof(float) * 32 * 256);
    poison_inputs(b.s, 1);
    const float *unaligned[1] = {odd};
    CHECK_STATUS(mt_session_train_step(a.s, 32, &la), MT_OK);
    CHECK_STATUS(mt_session_train_step_rows(b.s, 32, unaligned, &lb), MT_OK);
    CHECK_BITS_EQ(la, lb);
    CHECK(same_params(a.s, b.s));
    CHECK(pointers_restored(b.s));
    free(block);
    CHECK(guards_intact(&a) && guards_intact(&b));
    free(a.block), free(b.block), free(md.img);
}

/* ---- refusals: nothing read, nothing changed ------------------------------------------------ */

static void check_refusals(void)
{
    const model md = mlp(3, 4, 2, 4, "tiny");
    mt_train_config cfg;
    guarded a, b;
    float loss = 0.f;
    mt_error_detail detail;
    config(&cfg, MT_OPTIMIZER_ADAM, MT_LOSS_CATEGORICAL_CROSSENTROPY, md.batch);
    CHECK_STATUS(open_guarded(&a, md.img, md.bytes, &cfg), MT_OK);
    CHECK_STATUS(open_guarded(&b, md.img, md.bytes, &cfg), MT_OK);
    /* an address a read would fault on: a refused n must not read the rows */
    const float *unreadable[1] = {(const float *)(uintptr_t)MT_ARENA_ALIGN};
    const int32_t bad_n[] = {0, -1, 5, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++) {
        CHECK_STATUS(mt_session_train_step_rows(b.s, bad_n[i], unreadable, &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_eval_step_rows(b.s, bad_n[i], unreadable, &loss), MT_ERR_BAD_ARGUMENT);
        CHECK_STATUS(mt_session_infer_rows(b.s, bad_n[i], unreadable), MT_ERR_BAD_ARGUMENT);
    }
    CHECK_STATUS(mt_session_train_step_rows(b.s, 1, NULL, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_last_error(b.s, &detail), MT_OK);
    CHECK_STATUS(detail.status, MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_eval_step_rows(b.s, 1, NULL, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_infer_rows(b.s, 1, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_train_step_rows(NULL, 1, unreadable, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_eval_step_rows(NULL, 1, unreadable, &loss), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_infer_rows(NULL, 1, unreadable), MT_ERR_BAD_ARGUMENT);
    CHECK(same_params(a.s, b.s));
    CHECK(pointers_restored(b.s));
    int64_t sa, sb, ea, eb;
    mt_session_counters(a.s, &sa, &ea), mt_session_counters(b.s, &sb, &eb);
    CHECK(sa == sb && ea == eb);
    CHECK(guards_intact(&a) && guards_intact(&b));
    free(a.block), free(b.block), free(md.img);
}

int main(void)
{
    model models[8];
    int count = 0;
    models[count++] = mlp(3, 4, 2, 6, "tiny MLP 3-4-2 (rows of 12 bytes: fenced when n % 4 == 0, else copied)");
    models[count++] = mlp(256, 24, 10, 32, "MLP 256-24-10");
    models[count] = (model){"digits CNN (Conv2D first)", NULL, 0, 1, {64, 0}, 10, 16};
    models[count].img = mz_digits_cnn(&models[count].bytes), count++;
    models[count] = (model){"residual DAG", NULL, 0, 1, {72, 0}, 5, 8};
    models[count].img = mz_residual_dag(&models[count].bytes), count++;
    models[count] = (model){"layout graph (Transpose first)", NULL, 0, 1, {108, 0}, 5, 8};
    models[count].img = mz_layout_graph(&models[count].bytes), count++;
    models[count] = (model){"ReLU first", NULL, 0, 1, {16, 0}, 10, 8};
    models[count].img = unary_first(MT_OP_RELU, 1, 71u, &models[count].bytes), count++;
    models[count] = (model){"Reshape first", NULL, 0, 1, {16, 0}, 10, 8};
    models[count].img = unary_first(MT_OP_RESHAPE, 2, 72u, &models[count].bytes), count++;
    models[count] = (model){"two inputs", NULL, 0, 2, {8, 8}, 10, 8};
    models[count].img = two_inputs(&models[count].bytes), count++;

    for (int i = 0; i < count; i++) {
        const int before = mt_test_failed_;
        check_model(&models[i], MT_OPTIMIZER_SGD, -1);
        check_model(&models[i], MT_OPTIMIZER_ADAM, -1);
        for (int own = 0; own < models[i].num_inputs && models[i].num_inputs > 1; own++)
            check_model(&models[i], MT_OPTIMIZER_SGD, own);
        if (mt_test_failed_ != before) printf("  (in %s)\n", models[i].name);
    }
    check_copied_rows();
    check_refusals();
    for (int i = 0; i < count; i++) free(models[i].img);
    return MT_TEST_END();
}
