/*
 * test_tiled_updates: a trained Dense or Conv2D weight of 16 KiB or more is updated a block of
 * output rows (units, output channels) at a time, tiles of 4 KiB, with fused updates
 * (plan_lifetimes.c, session.c update_in_tiles).
 *
 *   - bits: a fused step with tiles equals the buffered step (accumulate_gradients = 1:
 *     zero_grad + accumulate + optimizer_step, whole gradients) bit for bit, loss and every
 *     weight, over three steps (momentum and Adam's moments carry over), for SGD, SGD with
 *     momentum and decay, Adam with the proximal term, AdamW; whole and partial batches, MEAN
 *     and SUM; an MLP whose second Dense is tiled and first is not (the dx below the tiled
 *     layer comes from its old weights), the same with its first layer frozen, a CNN (Conv2D
 *     into two Dense, the first tiled), a tiled 3x3 Conv2D, and a tiled 1x1 Conv2D (Dense
 *     over the pixels) over a trained 3x3 one; at every kernel level this machine runs
 *     (portable, AVX2, AVX-512);
 *   - the plan: which weights are tiled (tiled_updates), each one's gradient buffer one tile
 *     of the most whole rows whose dW and dy columns fit 4096 bytes (mt_plan_buffers and
 *     gradient_bytes, recomputed here from that rule), the whole gradient for a weight under
 *     16 KiB or where the tile would not be smaller, none with accumulation or the guard,
 *     none where the whole gradient shares bytes that tiles would leave unused anyway;
 *   - a checkpoint of a session with tiles loads into another, both then step alike;
 *   - the guard: an update that would overflow in the last tile of W2 alone refuses the step
 *     before any element of W2 changes (its earlier tiles included), as without tiles.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "kernel_levels_util.h"
#include "microtrain.h"
#include "microtrain_checkpoint.h"
#include "mt_test.h"
#include "session_util.h"

#define TILE_BYTES 4096u
#define TILED_MIN_BYTES 16384u

/* The tile rule of plan_lifetimes.c, written again: the most whole rows R whose dW rows and
 * dy columns, R·(I + B) floats, fit TILE_BYTES, at least one; 0 (whole gradient) for a weight
 * under TILED_MIN_BYTES or when that tile holds every row or is not smaller than the weight.
 * Bytes rounded to 16. */
static size_t tile_bytes(uint32_t units, uint32_t in, uint32_t batch)
{
    if (units * in * 4u < TILED_MIN_BYTES) return 0;
    uint32_t rows = TILE_BYTES / 4u / (in + batch);
    if (rows == 0) rows = 1;
    if (rows >= units || rows * (in + batch) >= units * in) return 0;
    return ((size_t)rows * (in + batch) * 4u + 15u) & ~(size_t)15u;
}

typedef struct model {
    const char *name;
    uint8_t *img;
    size_t bytes;
    int in, out;         /* features of input 0 and of the target */
    int loss;
    int tiled_when_fused; /* weights the plan tiles at batch B */
} model;

static uint8_t *mlp(int frozen_first, size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 16, spec.hidden = 64, spec.out = 64; /* W1 [64, 16]: 4,096 bytes; W2 [64, 64]: 16,384 */
    spec.hidden_act = MT_OP_RELU;
    spec.frozen_first = frozen_first;
    return ib_build_mlp(&spec, bytes);
}

/* x[6,6,2] -> Conv 3x3x8 VALID relu [4,4,8] -> Dense 40 (W [40, 128]: 20,480 bytes) -> ReLU
 * -> Dense 12 -> Softmax, cross-entropy */
static uint8_t *cnn(size_t *bytes)
{
    static ib_model m;
    static float w[6000];
    ib_init(&m);
    mt_test_seed(2024u);
    for (int i = 0; i < 6000; i++) w[i] = mt_test_uniform(-0.3f, 0.3f);
    const int flags = MT_TENSOR_CONST | MT_TENSOR_TRAINABLE;
    const int32_t xd[3] = {6, 6, 2}, cw[4] = {8, 3, 3, 2}, c8[1] = {8}, yd[3] = {4, 4, 8};
    const int32_t d1[2] = {40, 128}, u40[1] = {40}, d2[2] = {12, 40}, u12[1] = {12};
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    int k = ib_tensor(&m, MT_DTYPE_F32, flags, 4, cw, w), kb = ib_tensor(&m, MT_DTYPE_F32, flags, 1, c8, w + 200);
    int y = ib_tensor(&m, MT_DTYPE_F32, 0, 3, yd, NULL);
    int w1 = ib_tensor(&m, MT_DTYPE_F32, flags, 2, d1, w + 300), b1 = ib_tensor(&m, MT_DTYPE_F32, flags, 1, u40, w);
    int h = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u40, NULL), a = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u40, NULL);
    int w2 = ib_tensor(&m, MT_DTYPE_F32, flags, 2, d2, w + 5500), b2 = ib_tensor(&m, MT_DTYPE_F32, flags, 1, u12, w + 50);
    int z = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u12, NULL), p = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, u12, NULL);
    const int conv_in[3] = {x, k, kb}, d1_in[3] = {y, w1, b1}, d2_in[3] = {a, w2, b2};
    ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, conv_in, 1, &y), 0, 0, 1, 1, MT_PADDING_VALID, MT_FUSED_RELU);
    ib_op(&m, MT_OP_DENSE, 3, d1_in, 1, &h);
    ib_op(&m, MT_OP_RELU, 1, &h, 1, &a);
    ib_op(&m, MT_OP_DENSE, 3, d2_in, 1, &z);
    ib_op(&m, MT_OP_SOFTMAX, 1, &z, 1, &p);
    ib_input(&m, x);
    ib_output(&m, p);
    return ib_build(&m, bytes);
}

/* A trainable CONST tensor of uniform [-0.2, 0.2) weights */
static int param(ib_model *m, int ndim, const int32_t *dims, int count)
{
    static float w[IB_MAX_FLOATS];
    for (int i = 0; i < count; i++) w[i] = mt_test_uniform(-0.2f, 0.2f);
    return ib_tensor(m, MT_DTYPE_F32, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, ndim, dims, w);
}

/* x[S,S,C] -> Conv KxKx64 SAME relu (W [64, K, K, C]) -> [then, pointwise: Conv 1x1x64 relu
 * (W [64, 1, 1, 64])] -> GlobalAveragePool -> Dense 5 -> Softmax, cross-entropy */
static uint8_t *conv_net(int S, int C, int K, int pointwise, size_t *bytes)
{
    static ib_model m;
    ib_init(&m);
    mt_test_seed(777u + (unsigned)K);
    const int32_t xd[3] = {S, S, C}, wd[4] = {64, K, K, C}, pd[4] = {64, 1, 1, 64}, c64[1] = {64};
    const int32_t yd[3] = {S, S, 64}, dd[2] = {5, 64}, c5[1] = {5};
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    int w = param(&m, 4, wd, 64 * K * K * C), b = param(&m, 1, c64, 64);
    int y = ib_tensor(&m, MT_DTYPE_F32, 0, 3, yd, NULL);
    const int conv_in[3] = {x, w, b};
    ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, conv_in, 1, &y), 0, 0, 1, 1, MT_PADDING_SAME, MT_FUSED_RELU);
    if (pointwise) {
        int pw = param(&m, 4, pd, 64 * 64), pb = param(&m, 1, c64, 64);
        int py = ib_tensor(&m, MT_DTYPE_F32, 0, 3, yd, NULL);
        const int pw_in[3] = {y, pw, pb};
        ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, pw_in, 1, &py), 0, 0, 1, 1, MT_PADDING_VALID,
                          MT_FUSED_RELU);
        y = py;
    }
    int g = ib_tensor(&m, MT_DTYPE_F32, 0, 1, c64, NULL);
    ib_op(&m, MT_OP_GLOBAL_AVERAGE_POOL, 1, &y, 1, &g);
    int dw = param(&m, 2, dd, 5 * 64), db = param(&m, 1, c5, 5);
    int z = ib_tensor(&m, MT_DTYPE_F32, 0, 1, c5, NULL), p = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, c5, NULL);
    const int dense_in[3] = {g, dw, db};
    ib_op(&m, MT_OP_DENSE, 3, dense_in, 1, &z);
    ib_op(&m, MT_OP_SOFTMAX, 1, &z, 1, &p);
    ib_input(&m, x);
    ib_output(&m, p);
    return ib_build(&m, bytes);
}

static const struct {
    const char *name;
    int optimizer;
    float momentum, weight_decay, mu;
} OPTIMIZERS[] = {
    {"sgd", MT_OPTIMIZER_SGD, 0.0f, 0.0f, 0.0f},
    {"sgd momentum decay", MT_OPTIMIZER_SGD, 0.9f, 0.01f, 0.0f},
    {"adam proximal", MT_OPTIMIZER_ADAM, 0.0f, 0.0f, 0.05f},
    {"adamw", MT_OPTIMIZER_ADAMW, 0.0f, 0.01f, 0.0f},
};

#define BATCH 5

static mt_train_config config_for(const model *m, int o, int reduction, int accumulate)
{
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = OPTIMIZERS[o].optimizer;
    cfg.momentum = OPTIMIZERS[o].momentum;
    cfg.weight_decay = OPTIMIZERS[o].weight_decay;
    cfg.proximal_mu = OPTIMIZERS[o].mu;
    cfg.learning_rate = cfg.optimizer == MT_OPTIMIZER_SGD ? 0.05f : 0.01f;
    cfg.loss = m->loss;
    cfg.reduction = reduction;
    cfg.batch_size = BATCH;
    cfg.accumulate_gradients = accumulate;
    return cfg;
}

/* Rows 0..n-1 of input 0 (uniform in [-1, 1)) and the targets: one-hot for cross-entropy,
 * uniform in [0, 1) for MSE; the same for equal seeds. */
static void feed(mt_session *s, const model *m, int n, unsigned seed)
{
    float *x, *t;
    int32_t count, tb;
    mt_test_seed(seed);
    mt_session_input(s, 0, &x, &count);
    mt_session_target(s, (void **)&t, &tb);
    for (int i = 0; i < n * m->in; i++) x[i] = mt_test_uniform(-1.f, 1.f);
    for (int r = 0; r < n; r++)
        for (int j = 0; j < m->out; j++)
            t[r * m->out + j] = m->loss == MT_LOSS_MSE ? mt_test_uniform(0.f, 1.f) : (float)(j == (r * 7) % m->out);
}

static void bits_case(const model *m, int o, int reduction, int level)
{
    mt_train_config fused = config_for(m, o, reduction, 0), kept = config_for(m, o, reduction, 1);
    sess f, a;
    mt_memory_plan plan;
    CHECK_STATUS(sess_open(&f, m->img, m->bytes, &fused), MT_OK);
    CHECK_STATUS(sess_open(&a, m->img, m->bytes, &kept), MT_OK);
    CHECK_STATUS(mt_session_plan(f.s, &plan), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, m->tiled_when_fused);
    const int rows[3] = {BATCH, 3, 1}; /* whole, then partial batches */
    int same = 1;
    for (int step = 0; step < 3; step++) {
        float lf = 1.f, la = 2.f;
        feed(f.s, m, rows[step], 77u + (unsigned)step), feed(a.s, m, rows[step], 77u + (unsigned)step);
        CHECK_STATUS(mt_session_train_step(f.s, rows[step], &lf), MT_OK);
        CHECK_STATUS(mt_session_train_step(a.s, rows[step], &la), MT_OK);
        same &= memcmp(&lf, &la, sizeof lf) == 0 && same_params(f.s, a.s) && same_counters(f.s, a.s);
    }
    if (!CHECK(same))
        printf("    %s, %s, reduction %d, kernel level %d: tiled and buffered steps differ\n", m->name,
               OPTIMIZERS[o].name, reduction, level);
    free(f.block), free(a.block);
}

static void test_tiled_equals_buffered(const model *models, int count)
{
    for (int level = 0; level < MT_KERNEL_LEVELS; level++) {
        if (!use_kernel_level(level)) continue;
        for (int k = 0; k < count; k++)
            for (int o = 0; o < (int)(sizeof OPTIMIZERS / sizeof OPTIMIZERS[0]); o++)
                bits_case(&models[k], o, (o & 1) ? MT_REDUCTION_SUM : MT_REDUCTION_MEAN, level);
    }
    use_cpu_kernel_level();
}

/* ---- the plan ---- */

typedef struct gradient_buffers {
    size_t bytes[64]; /* gradient bytes reported per tensor */
} gradient_buffers;

static mt_status note_gradient(void *user, const mt_buffer_info *b)
{
    gradient_buffers *g = (gradient_buffers *)user;
    if (b->kind == MT_BUFFER_GRADIENT && b->tensor_index >= 0 && b->tensor_index < 64)
        g->bytes[b->tensor_index] = b->bytes;
    return MT_OK;
}

static void test_plan_holds_one_tile(const model *mlp_model)
{
    /* MLP tensors: x 0, W1 1, b1 2, h 3, a 4, W2 5, b2 6, z 7 */
    const size_t t2 = tile_bytes(64, 64, BATCH);
    CHECK(tile_bytes(64, 16, BATCH) == 0 && t2 != 0 && t2 <= TILE_BYTES);
    mt_train_config cfg = config_for(mlp_model, 0, MT_REDUCTION_MEAN, 0);
    mt_memory_plan plan;
    gradient_buffers g;
    memset(&g, 0, sizeof g);
    CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &cfg, &plan), MT_OK);
    CHECK_STATUS(mt_plan_buffers(mlp_model->img, mlp_model->bytes, &cfg, note_gradient, &g), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, 1);
    CHECK_EQ_INT(plan.weight_tile_bytes, t2);
    CHECK_EQ_INT(g.bytes[1], 64 * 16 * 4); /* W1: whole, under 16 KiB */
    CHECK_EQ_INT(g.bytes[5], t2);
    CHECK_EQ_INT(plan.gradient_bytes, 64 * 16 * 4 + 64 * 4 + t2 + 64 * 4);

    /* accumulation, and the guard, keep every gradient whole */
    for (int mode = 0; mode < 2; mode++) {
        mt_train_config whole = cfg;
        if (mode) whole.guard_gradients = 1;
        else whole.accumulate_gradients = 1;
        CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &whole, &plan), MT_OK);
        CHECK_EQ_INT(plan.tiled_updates, 0);
        CHECK_EQ_INT(plan.weight_tile_bytes, 0);
        CHECK_EQ_INT(plan.gradient_bytes, (64 * 16 + 64 + 64 * 64 + 64) * 4);
    }

    /* at least one row, even past 4 KiB; and no tile that is not smaller than its weight:
     * at batch 3000 one row of W2 is 64 + 3000 floats, fewer than W2's 4,096; at 4100 not */
    cfg.batch_size = 3000;
    CHECK_EQ_INT(tile_bytes(64, 64, 3000), 4u * (64 + 3000));
    CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &cfg, &plan), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, 1);
    CHECK_EQ_INT(plan.weight_tile_bytes, 4u * (64 + 3000));
    cfg.batch_size = 4100;
    CHECK_EQ_INT(tile_bytes(64, 64, 4100), 0);
    CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &cfg, &plan), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, 0);
    CHECK_EQ_INT(plan.gradient_bytes, (64 * 16 + 64 + 64 * 64 + 64) * 4);
}

/* x[32,32,4] -> Conv 3x3x16 SAME (frozen) [32,32,16] -> GlobalAveragePool -> Dense 256
 * (W [256, 16], 16,384 bytes: tiles allowed), MSE. The conv's output (65,536 bytes at batch 1)
 * is dead by the Dense's backward, whose whole gradient takes its bytes: tiles would make the
 * arena no smaller, so the planner keeps the whole gradient (and its one dW pass). */
static void test_tiles_only_where_they_make_the_arena_smaller(void)
{
    static ib_model m;
    ib_init(&m);
    mt_test_seed(99u);
    const int32_t xd[3] = {32, 32, 4}, wd[4] = {16, 3, 3, 4}, c16[1] = {16}, yd[3] = {32, 32, 16};
    const int32_t dd[2] = {256, 16}, c256[1] = {256};
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    int w = param(&m, 4, wd, 16 * 9 * 4), b = param(&m, 1, c16, 16);
    int y = ib_tensor(&m, MT_DTYPE_F32, 0, 3, yd, NULL), g = ib_tensor(&m, MT_DTYPE_F32, 0, 1, c16, NULL);
    const int conv_in[3] = {x, w, b};
    ib_spatial_params(&m, ib_op(&m, MT_OP_CONV2D, 3, conv_in, 1, &y), 0, 0, 1, 1, MT_PADDING_SAME, MT_FUSED_RELU);
    ib_op(&m, MT_OP_GLOBAL_AVERAGE_POOL, 1, &y, 1, &g);
    int dw = param(&m, 2, dd, 256 * 16), db = param(&m, 1, c256, 256);
    int z = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, c256, NULL);
    const int dense_in[3] = {g, dw, db};
    ib_op(&m, MT_OP_DENSE, 3, dense_in, 1, &z);
    ib_input(&m, x);
    ib_output(&m, z);
    size_t bytes;
    uint8_t *img = ib_build(&m, &bytes);
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.num_trainable_ops = 1;
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
    CHECK(tile_bytes(256, 16, 1) != 0); /* allowed by the rule */
    CHECK_EQ_INT(plan.tiled_updates, 0);
    CHECK_EQ_INT(plan.gradient_bytes, (256 * 16 + 256) * 4);
    /* and a session laid out from that plan trains with whole gradients */
    sess a;
    CHECK_STATUS(sess_open(&a, img, bytes, &cfg), MT_OK);
    CHECK_STATUS(mt_session_train_step(a.s, 1, NULL), MT_OK);
    free(a.block), free(img);
}

/* A checkpoint of a session with tiles loads into another and both train on with the same
 * bits: loading clears no fused gradient (a tile is not the weight's size). */
static void test_checkpoint_round_trip_with_tiles(const model *mlp_model)
{
    mt_train_config cfg = config_for(mlp_model, 2, MT_REDUCTION_MEAN, 0); /* Adam, proximal */
    sess a, b;
    CHECK_STATUS(sess_open(&a, mlp_model->img, mlp_model->bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, mlp_model->img, mlp_model->bytes, &cfg), MT_OK);
    mt_memory_plan plan;
    CHECK_STATUS(mt_session_plan(b.s, &plan), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, 1);
    for (int step = 0; step < 2; step++) {
        feed(a.s, mlp_model, BATCH, 40u + (unsigned)step);
        CHECK_STATUS(mt_session_train_step(a.s, BATCH, NULL), MT_OK);
    }
    static uint8_t checkpoint[200000];
    size_t written = 0;
    CHECK_STATUS(mt_checkpoint_save_buffer(a.s, 1, NULL, 0, checkpoint, sizeof checkpoint, &written), MT_OK);
    CHECK_STATUS(mt_checkpoint_load_buffer(b.s, checkpoint, written, NULL, NULL), MT_OK);
    float la = 1.f, lb = 2.f;
    feed(a.s, mlp_model, BATCH, 50u), feed(b.s, mlp_model, BATCH, 50u);
    CHECK_STATUS(mt_session_train_step(a.s, BATCH, &la), MT_OK);
    CHECK_STATUS(mt_session_train_step(b.s, BATCH, &lb), MT_OK);
    CHECK(memcmp(&la, &lb, sizeof la) == 0 && same_params(a.s, b.s) && same_counters(a.s, b.s));
    free(a.block), free(b.block);
}

/* ---- the guard ---- */

static void test_guard_refuses_before_any_tile(const model *mlp_model)
{
    /* SGD with decay: w - lr·(g + wd·w) = w·(1 - lr·wd) - lr·g. Hidden unit 63 is dead on
     * every row (b1[63] = -1000: ReLU gives 0), so W2[63][63] = 1e38 changes no output and
     * gets a zero gradient, and its update 1e38·(1 - 5·0.9) = -3.5e38 overflows: the last
     * tile of W2 is refused, every other element's update is finite. W2's op is the first
     * backward, so nothing at all is updated. */
    mt_train_config cfg = config_for(mlp_model, 0, MT_REDUCTION_MEAN, 0);
    cfg.learning_rate = 5.0f, cfg.weight_decay = 0.9f;
    sess a;
    CHECK_STATUS(sess_open(&a, mlp_model->img, mlp_model->bytes, &cfg), MT_OK);
    mt_param_info b1, w2;
    CHECK_STATUS(mt_session_param(a.s, 1, &b1), MT_OK);
    CHECK_STATUS(mt_session_param(a.s, 2, &w2), MT_OK);
    CHECK(b1.trained && b1.count == 64 && w2.trained && w2.count == 64 * 64);
    b1.data[63] = -1000.0f;
    w2.data[63 * 64 + 63] = 1e38f;
    float before[4][4096];
    int32_t counts[4];
    for (int p = 0; p < 4; p++) {
        const float *w = param_data(a.s, p, &counts[p]); /* sets counts[p] first */
        memcpy(before[p], w, 4u * (size_t)counts[p]);
    }

    float loss = 0.f;
    feed(a.s, mlp_model, BATCH, 5u);
    CHECK_STATUS(mt_session_train_step(a.s, BATCH, &loss), MT_ERR_NUMERIC);
    CHECK(isfinite(loss));
    int64_t errors = 0, step = -1;
    mt_session_numeric_errors(a.s, &errors);
    mt_session_counters(a.s, &step, NULL);
    CHECK_EQ_INT(errors, 1);
    CHECK_EQ_INT(step, 0);
    mt_error_detail where;
    mt_session_last_error(a.s, &where);
    CHECK_EQ_INT(where.op_index, 2);
    CHECK_EQ_INT(where.tensor_index, 5);
    int32_t n;
    /* no element of W2 changed, not even its first tiles', whose updates were finite */
    for (int p = 0; p < 4; p++) CHECK(memcmp(param_data(a.s, p, &n), before[p], 4u * (size_t)counts[p]) == 0);

    /* at a rate that overflows nothing, the same batch updates every tile, the first and last */
    CHECK_STATUS(mt_session_set_learning_rate(a.s, 0.01f), MT_OK);
    CHECK_STATUS(mt_session_train_step(a.s, BATCH, &loss), MT_OK);
    const float *w = param_data(a.s, 2, &n);
    CHECK(memcmp(w, before[2], 4u * 8u * 64u) != 0);
    CHECK(memcmp(w + 56 * 64, before[2] + 56 * 64, 4u * 8u * 64u) != 0);
    free(a.block);
}

int main(void)
{
    model models[5] = {
        {"mlp", NULL, 0, 16, 64, MT_LOSS_MSE, 1},
        {"mlp, first layer frozen", NULL, 0, 16, 64, MT_LOSS_MSE, 1},
        {"cnn", NULL, 0, 72, 12, MT_LOSS_CATEGORICAL_CROSSENTROPY, 1},
        /* Conv 3x3x64 over 8 channels: W 18,432 bytes, tiles of 4 channels (72 + 5·36 floats each) */
        {"conv 3x3 tiled", NULL, 0, 6 * 6 * 8, 5, MT_LOSS_CATEGORICAL_CROSSENTROPY, 1},
        /* Conv 3x3x64 over 4 (9,216 bytes, whole) into Conv 1x1x64 (16,384 bytes, tiled as Dense
         * over the pixels: 9 channels of 64 + 5·16 floats a tile) */
        {"conv 1x1 tiled over conv", NULL, 0, 4 * 4 * 4, 5, MT_LOSS_CATEGORICAL_CROSSENTROPY, 1},
    };
    models[0].img = mlp(0, &models[0].bytes);
    models[1].img = mlp(1, &models[1].bytes);
    models[2].img = cnn(&models[2].bytes);
    models[3].img = conv_net(6, 8, 3, 0, &models[3].bytes);
    models[4].img = conv_net(4, 4, 3, 1, &models[4].bytes);
    test_tiled_equals_buffered(models, 5);
    test_plan_holds_one_tile(&models[0]);
    test_tiles_only_where_they_make_the_arena_smaller();
    test_checkpoint_round_trip_with_tiles(&models[0]);
    test_guard_refuses_before_any_tile(&models[0]);
    for (int k = 0; k < 5; k++) free(models[k].img);
    return MT_TEST_END();
}
