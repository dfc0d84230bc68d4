/*
 * test_sparse_update: mt_train_config.trainable_op_channels (plan_sparse.c, session.h's
 * mt_weight_part): per op, -1 all its weights, 0 its bias only, k its bias and its first k
 * output channels.
 *
 *   - bits: a sparse session's trained channels equal, bit for bit and over three steps, those
 *     of a session training every weight whose frozen channels are put back to their image
 *     values after each step (each element's update depends on its own gradient and state
 *     alone, and a frozen channel's value is what the forward reads in both); its frozen
 *     channels keep their image bits. For SGD, SGD with momentum and decay, Adam with the
 *     proximal term and AdamW; fused updates (a Dense's first k rows in tiles, the
 *     Conv2Ds' whole small gradients of which the first k rows are applied, the Depthwise's
 *     channels as runs of k) and accumulation (whole gradients, the trained runs updated),
 *     whole and partial batches;
 *   - the plan: optimizer state for the trained channels only, the gradient of the partial
 *     Dense one tile of at most k rows, of the small convolutions their whole gradient, where
 *     a tile would be larger (mt_plan_buffers); a plan with channels laid out again from
 *     itself (mt_session_init_from_plan) alike;
 *   - the arena holds only the trained rows of a float Dense or Conv2D (the others read from
 *     the image): the weight and reference bytes of the plan say so, and the bits above are
 *     the whole weight's;
 *   - a checkpoint of a sparse Adam session loads into another; both then step alike; it holds
 *     whole weights (a session training every row loads it), and one whose frozen rows differ
 *     from the image is refused (MT_ERR_CHECKPOINT_MISMATCH); the exported image has the
 *     session's weights, the frozen rows the image's;
 *   - refusals: a value below -1 and k beyond the channels (MT_ERR_BAD_ARGUMENT), k on an op
 *     without a weight of channels (MT_ERR_UNSUPPORTED), each naming its op; a plan made for
 *     other channel counts, or none, refused by mt_session_init_from_plan (the config CRC).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "microtrain_checkpoint.h"
#include "mt_test.h"
#include "session_util.h"

#define BATCH 4
#define NUM_OPS 8
#define CLASSES 6

/* ops: 0 Conv 3x3x8 SAME relu, 1 Depthwise 3x3 SAME relu, 2 Conv 1x1x48 relu, 3 GAP,
 * 4 Dense 100 (W [100, 48], 19,200 bytes), 5 ReLU, 6 Dense 6, 7 Softmax; x [6,6,3] */
static uint8_t *model(size_t *bytes)
{
    static ib_model m;
    static float w[IB_MAX_FLOATS];
    ib_init(&m);
    mt_test_seed(4040u);
    for (int i = 0; i < IB_MAX_FLOATS; i++) w[i] = mt_test_uniform(-0.3f, 0.3f);
    const int f = MT_TENSOR_CONST | MT_TENSOR_TRAINABLE;
    const int32_t xd[3] = {6, 6, 3}, cw[4] = {8, 3, 3, 3}, dw[4] = {1, 3, 3, 8}, pw[4] = {48, 1, 1, 8};
    const int32_t c8[1] = {8}, c48[1] = {48}, a8[3] = {6, 6, 8}, a48[3] = {6, 6, 48};
    const int32_t d1[2] = {100, 48}, u100[1] = {100}, d2[2] = {CLASSES, 100}, u6[1] = {CLASSES};
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    int k0 = ib_tensor(&m, MT_DTYPE_F32, f, 4, cw, w), b0 = ib_tensor(&m, MT_DTYPE_F32, f, 1, c8, w + 300);
    int k1 = ib_tensor(&m, MT_DTYPE_F32, f, 4, dw, w + 400), b1 = ib_tensor(&m, MT_DTYPE_F32, f, 1, c8, w + 500);
    int k2 = ib_tensor(&m, MT_DTYPE_F32, f, 4, pw, w + 600), b2 = ib_tensor(&m, MT_DTYPE_F32, f, 1, c48, w + 1000);
    int w3 = ib_tensor(&m, MT_DTYPE_F32, f, 2, d1, w + 1100), b3 = ib_tensor(&m, MT_DTYPE_F32, f, 1, u100, w + 6000);
    int w4 = ib_tensor(&m, MT_DTYPE_F32, f, 2, d2, w + 6200), b4 = ib_tensor(&m, MT_DTYPE_F32, f, 1, u6, w + 7000);
    int y0 = ib_tensor(&m, MT_DTYPE_F32, 0, 3, a8, NULL), y1 = ib_tensor(&m, MT_DTYPE_F32, 0, 3, a8, NULL);
    int y2 = ib_tensor(&m, MT_DTYPE_F32, 0, 3, a48, NULL), g = ib_tensor(&m, MT_DTYPE_F32, 0, 1, c48, NULL);
    int h = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u100, NULL), a = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u100, NULL);
    int z = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u6, NULL), p = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, u6, NULL);
    ib_input(&m, x);
    ib_output(&m, p);
    const int in0[3] = {x, k0, b0}, in1[3] = {y0, k1, b1}, in2[3] = {y1, k2, b2};
    const int in4[3] = {g, w3, b3}, in6[3] = {a, w4, b4};
    ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, in0, 1, &y0), 0, 0, 1, 1, MT_PADDING_SAME, MT_FUSED_RELU);
    ib_spatial_params(&m, ib_op(&m, MT_OP_DEPTHWISE_CONV2D, 3, in1, 1, &y1), 0, 0, 1, 1, MT_PADDING_SAME,
                      MT_FUSED_RELU);
    ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, in2, 1, &y2), 0, 0, 1, 1, MT_PADDING_VALID, MT_FUSED_RELU);
    ib_op(&m, MT_OP_GLOBAL_AVERAGE_POOL, 1, &y2, 1, &g);
    ib_op(&m, MT_OP_DENSE, 3, in4, 1, &h);
    ib_op(&m, MT_OP_RELU, 1, &h, 1, &a);
    ib_op(&m, MT_OP_DENSE, 3, in6, 1, &z);
    ib_op(&m, MT_OP_SOFTMAX, 1, &z, 1, &p);
    return ib_build(&m, bytes);
}

/* Two schemes: partial channels of every kind (the Dense 100 in tiles of its first 37 rows);
 * the Dense 100's bias only and the last Dense's first 2 rows, the convolutions frozen */
static const int32_t SCHEMES[2][NUM_OPS] = {
    {3, 5, 20, -1, 37, -1, -1, -1},
    {-1, -1, -1, -1, 0, -1, 2, -1},
};
static const uint8_t LAST_THREE[NUM_OPS] = {0, 0, 0, 0, 1, 1, 1, 1};

/* Per weight tensor (the image's order: k0 b0 k1 b1 k2 b2 w3 b3 w4 b4), the trained channels
 * of each scheme: its element i trains when element_trains() says so. */
static int element_trains(int scheme, int param, int32_t i)
{
    const int32_t *c = SCHEMES[scheme];
    if (scheme == 1 && param < 6) return 0; /* the mask leaves the convolutions frozen */
    switch (param) {
    case 0: return i / 27 < c[0];                  /* Conv [8, 3,3,3]: rows of 27 */
    case 2: return i % 8 < c[1];                   /* Depthwise [1,3,3,8]: channel = i mod 8 */
    case 4: return i / 8 < c[2];                   /* Conv 1x1 [48, 1,1,8]: rows of 8 */
    case 6: return c[4] != 0 && (c[4] < 0 || i / 48 < c[4]); /* Dense [100, 48] */
    case 8: return c[6] < 0 || i / 100 < c[6];     /* Dense [6, 100] */
    default: return 1;                             /* biases */
    }
}

/* SGD, SGD with momentum and decay, Adam with the proximal term, AdamW */
typedef struct optimizer_case {
    int optimizer;
    float momentum, weight_decay, mu, learning_rate;
} optimizer_case;

static const optimizer_case OPTIMIZERS[] = {
    {MT_OPTIMIZER_SGD, 0.0f, 0.0f, 0.0f, 0.1f},
    {MT_OPTIMIZER_SGD, 0.9f, 0.01f, 0.0f, 0.1f},
    {MT_OPTIMIZER_ADAM, 0.0f, 0.0f, 0.05f, 0.02f},
    {MT_OPTIMIZER_ADAMW, 0.0f, 0.01f, 0.0f, 0.02f},
};

/* scheme's configuration (sparse: with its channel counts; else every weight of the ops it
 * trains), optimizer case o */
static mt_train_config config_for(int scheme, int o, int accumulate, int sparse)
{
    const optimizer_case *c = &OPTIMIZERS[o];
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
    cfg.batch_size = BATCH;
    cfg.accumulate_gradients = accumulate;
    cfg.optimizer = c->optimizer, cfg.learning_rate = c->learning_rate;
    cfg.momentum = c->momentum, cfg.weight_decay = c->weight_decay, cfg.proximal_mu = c->mu;
    if (scheme == 1) cfg.trainable_op_mask = LAST_THREE;
    if (sparse) cfg.trainable_op_channels = SCHEMES[scheme];
    return cfg;
}

static void feed(mt_session *s, int n, unsigned seed)
{
    float *x, *t;
    int32_t count, tb;
    mt_test_seed(seed);
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, (void **)&t, &tb);
    for (int i = 0; i < n * 108; i++) x[i] = mt_test_uniform(-1.f, 1.f);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < CLASSES; j++) t[r * CLASSES + j] = (float)(j == (r * 5 + 1) % CLASSES);
}

static mt_status step(sess *g, int accumulate, int n, float *loss)
{
    if (!accumulate) return mt_session_train_step(g->s, n, loss);
    mt_status st = mt_session_zero_grad(g->s);
    if (st == MT_OK) st = mt_session_accumulate(g->s, n, loss);
    return st == MT_OK ? mt_session_optimizer_step(g->s) : st;
}

/* The full session's frozen elements back to the image's bits. */
static void refreeze(sess *full, int scheme)
{
    int32_t n = 0;
    mt_session_param_count(full->s, &n);
    for (int p = 0; p < n; p++) {
        mt_param_info info;
        mt_session_param(full->s, p, &info);
        for (int32_t i = 0; info.trained && i < info.count; i++)
            if (!element_trains(scheme, p, i)) info.data[i] = info.image_data[i];
    }
}

/* Every weight of the sparse session: trained elements equal the full session's, the others
 * their image bits. */
static int same_trained_frozen(sess *sparse, sess *full, int scheme, int *changed)
{
    int32_t n = 0, same = 1;
    mt_session_param_count(sparse->s, &n);
    for (int p = 0; p < n; p++) {
        mt_param_info info, full_info;
        mt_session_param(sparse->s, p, &info);
        mt_session_param(full->s, p, &full_info);
        for (int32_t i = 0; i < info.count; i++) {
            const float a = param_value(&info, i);
            const float want = element_trains(scheme, p, i) ? param_value(&full_info, i) : info.image_data[i];
            same &= memcmp(&a, &want, 4) == 0;
            *changed |= element_trains(scheme, p, i) && a != info.image_data[i];
        }
    }
    return same;
}

static void test_bits(const uint8_t *img, size_t bytes)
{
    for (int scheme = 0; scheme < 2; scheme++)
        for (int o = 0; o < 4; o++)
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                mt_train_config cs = config_for(scheme, o, accumulate, 1), cf = config_for(scheme, o, accumulate, 0);
                sess sparse, full;
                CHECK_STATUS(sess_open(&sparse, img, bytes, &cs), MT_OK);
                CHECK_STATUS(sess_open(&full, img, bytes, &cf), MT_OK);
                const int rows[3] = {BATCH, 3, 1};
                int same = 1, changed = 0;
                for (int k = 0; k < 3; k++) {
                    float ls = 1.f, lf = 2.f;
                    feed(sparse.s, rows[k], 50u + (unsigned)k), feed(full.s, rows[k], 50u + (unsigned)k);
                    CHECK_STATUS(step(&sparse, accumulate, rows[k], &ls), MT_OK);
                    CHECK_STATUS(step(&full, accumulate, rows[k], &lf), MT_OK);
                    refreeze(&full, scheme);
                    same &= memcmp(&ls, &lf, 4) == 0;
                    same &= same_trained_frozen(&sparse, &full, scheme, &changed);
                }
                if (!same || !changed)
                    printf("  scheme %d optimizer %d accumulate %d: same %d changed %d\n", scheme, o, accumulate,
                           same, changed);
                CHECK(same);
                CHECK(changed);
                free(sparse.block), free(full.block);
            }
}

typedef struct tally {
    size_t grad[MT_MAX_TENSORS];
} tally;

static mt_status count_buffer(void *user, const mt_buffer_info *b)
{
    tally *t = (tally *)user;
    if (b->kind == MT_BUFFER_GRADIENT && b->tensor_index >= 0) t->grad[b->tensor_index] += b->bytes;
    return MT_OK;
}

static size_t round16(size_t bytes)
{
    return (bytes + 15u) & ~(size_t)15u;
}

static void test_plan(const uint8_t *img, size_t bytes)
{
    for (int o = 0; o < 4; o += 2) { /* SGD (no state), Adam (m and v) */
        mt_train_config cs = config_for(0, o, 0, 1), cf = config_for(0, o, 0, 0);
        mt_memory_plan ps, pf;
        CHECK_STATUS(mt_plan(img, bytes, &cs, &ps), MT_OK);
        CHECK_STATUS(mt_plan(img, bytes, &cf, &pf), MT_OK);
        const size_t arrays = o == 0 ? 0u : 2u;
        /* trained elements of each weight, its bias whole: conv 3·27, dw 9·5, pw 20·8, dense 37·48, 6·100 */
        const size_t elements[10] = {81, 8, 45, 8, 160, 48, 37 * 48, 100, 600, 6};
        size_t state = 0;
        for (int k = 0; k < 10; k++) state += round16(elements[k] * 4u * arrays);
        CHECK_EQ_INT((long long)ps.optimizer_bytes, (long long)state);
        /* the arena holds the trained rows of the float Dense and Conv2Ds (conv 3 of 8 rows of 27,
         * pointwise 20 of 48 rows of 8, Dense 37 of 100 rows of 48), the depthwise's interleaved
         * channels whole; the proximal term's reference (Adam here) likewise */
        const size_t whole_rows = round16(8 * 27 * 4) + round16(48 * 8 * 4) + round16(100 * 48 * 4);
        const size_t held_rows = round16(3 * 27 * 4) + round16(20 * 8 * 4) + round16(37 * 48 * 4);
        CHECK_EQ_INT((long long)ps.weight_bytes, (long long)(pf.weight_bytes - whole_rows + held_rows));
        CHECK_EQ_INT((long long)ps.reference_bytes,
                     (long long)(pf.reference_bytes ? pf.reference_bytes - whole_rows + held_rows : 0));
        CHECK(ps.gradient_bytes < pf.gradient_bytes);
        tally t;
        memset(&t, 0, sizeof t);
        CHECK_STATUS(mt_plan_buffers(img, bytes, &cs, count_buffer, &t), MT_OK);
        /* tensor indices: x 0, k0 1, b0 2, k1 3, b1 4, k2 5, b2 6, w3 7 ...; a tile of the first
         * k rows: Dense 100's rows of 48 + B dy columns, 4 KiB at most, k = 37 at most */
        const size_t dense_tile = round16((size_t)18 * (48 + BATCH) * 4u); /* 4096 / 4 / 52 = 19 rows, ... */
        CHECK(t.grad[7] > 0 && t.grad[7] <= round16((size_t)37 * (48 + BATCH) * 4u) && t.grad[7] <= 4096u);
        CHECK(t.grad[7] >= dense_tile);
        /* the convolutions' tiles (their rows' dW and dy columns, B·36 floats a row) would be
         * larger than their whole gradients: those stay whole, as the depthwise's does */
        CHECK_EQ_INT((long long)t.grad[1], 8 * 27 * 4);
        CHECK_EQ_INT((long long)t.grad[5], 48 * 8 * 4);
        CHECK_EQ_INT((long long)t.grad[3], 9 * 8 * 4);
        CHECK_EQ_INT(ps.tiled_updates, 1); /* the partial Dense 100, whatever the full plan tiles */
        sess g; /* laid out again from its own plan */
        CHECK_STATUS(sess_open(&g, img, bytes, &cs), MT_OK);
        mt_memory_plan again;
        CHECK_STATUS(mt_session_plan(g.s, &again), MT_OK);
        CHECK_EQ_INT((long long)again.total_bytes, (long long)ps.total_bytes);
        free(g.block);
    }
}

/* A checkpoint in memory (the model's is larger than session_util's sink holds) */
typedef struct memory {
    uint8_t data[1 << 17];
    size_t used;
} memory;

static mt_status write_mem(void *user, const void *data, size_t n)
{
    memory *m = (memory *)user;
    if (n > sizeof m->data - m->used) return MT_ERR_IO;
    memcpy(m->data + m->used, data, n);
    m->used += n;
    return MT_OK;
}

static void test_checkpoint(const uint8_t *img, size_t bytes)
{
    mt_train_config cfg = config_for(0, 2, 0, 1);
    sess a, b;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, img, bytes, &cfg), MT_OK);
    float loss;
    feed(a.s, BATCH, 9u);
    CHECK_STATUS(mt_session_train_step(a.s, BATCH, &loss), MT_OK);
    static memory k;
    k.used = 0;
    CHECK_STATUS(mt_checkpoint_save(a.s, 1, NULL, 0, write_mem, &k), MT_OK);
    source src = {k.data, k.used, 0, -1, 0, MT_OK};
    CHECK_STATUS(mt_checkpoint_load(b.s, k.used, source_read, &src, NULL, NULL), MT_OK);
    float la = 1.f, lb = 2.f;
    feed(a.s, BATCH, 10u), feed(b.s, BATCH, 10u);
    CHECK_STATUS(mt_session_train_step(a.s, BATCH, &la), MT_OK);
    CHECK_STATUS(mt_session_train_step(b.s, BATCH, &lb), MT_OK);
    CHECK(memcmp(&la, &lb, 4) == 0);
    CHECK(same_params(a.s, b.s));
    /* the checkpoint holds whole weights, the frozen rows the image's: a session training every
     * row loads it and then uses a's weights */
    mt_train_config whole = config_for(0, 2, 0, 0);
    sess f;
    CHECK_STATUS(sess_open(&f, img, bytes, &whole), MT_OK);
    k.used = 0;
    CHECK_STATUS(mt_checkpoint_save(a.s, 1, NULL, 0, write_mem, &k), MT_OK);
    source again = {k.data, k.used, 0, -1, 0, MT_OK};
    CHECK_STATUS(mt_checkpoint_load(f.s, k.used, source_read, &again, NULL, NULL), MT_OK);
    CHECK(same_params(a.s, f.s));
    /* ... but its checkpoint after a step has moved the frozen rows, which a cannot write (the
     * image's, in place): refused, a as it was */
    feed(f.s, BATCH, 11u);
    CHECK_STATUS(mt_session_train_step(f.s, BATCH, &la), MT_OK);
    k.used = 0;
    CHECK_STATUS(mt_checkpoint_save(f.s, 1, NULL, 0, write_mem, &k), MT_OK);
    source moved = {k.data, k.used, 0, -1, 0, MT_OK};
    CHECK_STATUS(mt_checkpoint_load(a.s, k.used, source_read, &moved, NULL, NULL), MT_ERR_CHECKPOINT_MISMATCH);
    CHECK(same_params(a.s, b.s));
    /* the exported image: a's weights, the frozen rows the image's (a session on it starts there) */
    k.used = 0;
    CHECK_STATUS(mt_session_export_image(a.s, write_mem, &k), MT_OK);
    sess e;
    CHECK_STATUS(sess_open(&e, k.data, k.used, &whole), MT_OK);
    CHECK(same_params(a.s, e.s));
    free(a.block), free(b.block), free(f.block), free(e.block);
}

static void refused(const uint8_t *img, size_t bytes, int op, int32_t value, mt_status want)
{
    int32_t channels[NUM_OPS] = {-1, -1, -1, -1, -1, -1, -1, -1};
    channels[op] = value;
    mt_train_config cfg = config_for(0, 0, 0, 0);
    cfg.trainable_op_channels = channels;
    mt_memory_plan plan;
    mt_error_detail where;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), want);
    CHECK_STATUS(mt_model_diagnose(img, bytes, &cfg, &where), want);
    CHECK_EQ_INT(where.op_index, op);
}

static void test_refusals(const uint8_t *img, size_t bytes)
{
    refused(img, bytes, 2, -2, MT_ERR_BAD_ARGUMENT);
    refused(img, bytes, 0, 9, MT_ERR_BAD_ARGUMENT);    /* Conv: 8 output channels */
    refused(img, bytes, 1, 9, MT_ERR_BAD_ARGUMENT);    /* Depthwise: 8 channels */
    refused(img, bytes, 4, 101, MT_ERR_BAD_ARGUMENT);  /* Dense: 100 units */
    refused(img, bytes, 5, 1, MT_ERR_UNSUPPORTED);     /* ReLU: no weight */
    refused(img, bytes, 3, 1, MT_ERR_UNSUPPORTED);     /* GAP */
    /* a plan is bound to its channel counts (the config's CRC): another's init refuses it */
    int32_t other[NUM_OPS];
    memcpy(other, SCHEMES[0], sizeof other);
    other[4] = 36;
    mt_train_config planned = config_for(0, 0, 0, 1), changed = planned, without = planned;
    changed.trainable_op_channels = other;
    without.trainable_op_channels = NULL;
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &planned, &plan), MT_OK);
    uint8_t *arena = (uint8_t *)malloc(plan.total_bytes + MT_ARENA_ALIGN);
    uint8_t *aligned = arena + (MT_ARENA_ALIGN - (uintptr_t)arena % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    mt_session *s = NULL;
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &changed, aligned, plan.total_bytes), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &without, aligned, plan.total_bytes), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &planned, aligned, plan.total_bytes), MT_OK);
    free(arena);
    /* k = C is the whole weight: the same plan as -1 */
    int32_t all[NUM_OPS] = {8, 8, 48, -1, 100, -1, 6, -1};
    mt_train_config a = config_for(0, 2, 0, 0), b = config_for(0, 2, 0, 0);
    a.trainable_op_channels = all;
    mt_memory_plan pa, pb;
    CHECK_STATUS(mt_plan(img, bytes, &a, &pa), MT_OK);
    CHECK_STATUS(mt_plan(img, bytes, &b, &pb), MT_OK);
    CHECK_EQ_INT((long long)pa.total_bytes, (long long)pb.total_bytes);
    CHECK_EQ_INT((long long)pa.optimizer_bytes, (long long)pb.optimizer_bytes);
}

int main(void)
{
    size_t bytes;
    uint8_t *img = model(&bytes);
    test_bits(img, bytes);
    test_plan(img, bytes);
    test_checkpoint(img, bytes);
    test_refusals(img, bytes);
    free(img);
    return MT_TEST_END();
}
