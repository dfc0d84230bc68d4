/*
 * test_tiled_updates: a trained Dense weight larger than one tile (4 KiB) is updated a block
 * of output rows at a time with fused updates (plan_lifetimes.c, session.c update_in_tiles).
 *
 *   - bits: a fused step with tiles equals the buffered step (accumulate_gradients = 1:
 *     zero_grad + accumulate + optimizer_step, whole gradients) bit for bit, loss and every
 *     weight, over three steps (momentum and Adam's moments carry over), for SGD, SGD with
 *     momentum and decay, Adam with the proximal term, AdamW; whole and partial batches, MEAN
 *     and SUM; an MLP, the same with its first layer frozen, and a CNN (Conv2D into two
 *     Dense); at every kernel level this machine runs (portable, AVX2, AVX-512);
 *   - the plan: which weights are tiled (tiled_updates), each one's gradient buffer one tile
 *     of the most whole rows whose dW and dy columns fit 4096 bytes (mt_plan_buffers and
 *     gradient_bytes, recomputed here from that rule), the whole gradient where the tile
 *     would not be smaller, none with accumulation or the guard;
 *   - the guard: an update that would overflow in the last tile of W1 only refuses the step
 *     before any element of W1 changes (the earlier tiles included), as without tiles: the
 *     weights updated before W1 in the step (W2, b2) keep their update, b1 is not reached.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "kernel_levels_util.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define TILE_BYTES 4096u

/* The tile rule of plan_lifetimes.c, written again: the most whole rows R whose dW rows and
 * dy columns, R·(I + B) floats, fit TILE_BYTES, at least one; 0 (whole gradient) when that
 * tile holds every row or is not smaller than the weight. Bytes rounded to 16. */
static size_t tile_bytes(uint32_t units, uint32_t in, uint32_t batch)
{
    uint32_t rows = TILE_BYTES / 4u / (in + batch);
    if (rows == 0) rows = 1;
    if (rows >= units || rows * (in + batch) >= units * in) return 0;
    return ((size_t)rows * (in + batch) * 4u + 15u) & ~(size_t)15u;
}

static size_t round16(size_t bytes)
{
    return (bytes + 15u) & ~(size_t)15u;
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
    spec.in = 40, spec.hidden = 60, spec.out = 24; /* W1 [60, 40]: 9,600 bytes; W2 [24, 60]: 5,760 */
    spec.hidden_act = MT_OP_TANH;
    spec.frozen_first = frozen_first;
    return ib_build_mlp(&spec, bytes);
}

/* x[6,6,2] -> Conv 3x3x8 VALID relu [4,4,8] -> Dense 20 (W [20, 128]: 10,240 bytes) -> ReLU
 * -> Dense 12 -> Softmax, cross-entropy */
static uint8_t *cnn(size_t *bytes)
{
    static ib_model m;
    static float w[4096];
    ib_init(&m);
    mt_test_seed(2024u);
    for (int i = 0; i < 4096; i++) w[i] = mt_test_uniform(-0.3f, 0.3f);
    const int flags = MT_TENSOR_CONST | MT_TENSOR_TRAINABLE;
    const int32_t xd[3] = {6, 6, 2}, cw[4] = {8, 3, 3, 2}, c8[1] = {8}, yd[3] = {4, 4, 8};
    const int32_t d1[2] = {20, 128}, u20[1] = {20}, d2[2] = {12, 20}, u12[1] = {12};
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    int k = ib_tensor(&m, MT_DTYPE_F32, flags, 4, cw, w), kb = ib_tensor(&m, MT_DTYPE_F32, flags, 1, c8, w + 200);
    int y = ib_tensor(&m, MT_DTYPE_F32, 0, 3, yd, NULL);
    int w1 = ib_tensor(&m, MT_DTYPE_F32, flags, 2, d1, w + 300), b1 = ib_tensor(&m, MT_DTYPE_F32, flags, 1, u20, w);
    int h = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u20, NULL), a = ib_tensor(&m, MT_DTYPE_F32, 0, 1, u20, NULL);
    int w2 = ib_tensor(&m, MT_DTYPE_F32, flags, 2, d2, w + 3000), b2 = ib_tensor(&m, MT_DTYPE_F32, flags, 1, u12, w + 50);
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
    const size_t t1 = tile_bytes(60, 40, BATCH), t2 = tile_bytes(24, 60, BATCH);
    CHECK(t1 != 0 && t2 != 0 && t1 <= TILE_BYTES && t2 <= TILE_BYTES);
    mt_train_config cfg = config_for(mlp_model, 0, MT_REDUCTION_MEAN, 0);
    mt_memory_plan plan;
    gradient_buffers g;
    memset(&g, 0, sizeof g);
    CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &cfg, &plan), MT_OK);
    CHECK_STATUS(mt_plan_buffers(mlp_model->img, mlp_model->bytes, &cfg, note_gradient, &g), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, 2);
    CHECK_EQ_INT(plan.weight_tile_bytes, (long long)(t1 > t2 ? t1 : t2));
    CHECK_EQ_INT(g.bytes[1], t1);
    CHECK_EQ_INT(g.bytes[5], t2);
    CHECK_EQ_INT(plan.gradient_bytes, t1 + t2 + round16(60 * 4) + round16(24 * 4));

    /* accumulation, and the guard, keep every gradient whole */
    for (int mode = 0; mode < 2; mode++) {
        mt_train_config whole = cfg;
        if (mode) whole.guard_gradients = 1;
        else whole.accumulate_gradients = 1;
        CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &whole, &plan), MT_OK);
        CHECK_EQ_INT(plan.tiled_updates, 0);
        CHECK_EQ_INT(plan.weight_tile_bytes, 0);
        CHECK_EQ_INT(plan.gradient_bytes, (60 * 40 + 60 + 24 * 60 + 24) * 4);
    }

    /* at least one row, even past 4 KiB; and a tile not smaller than its weight is none: at
     * batch 2000, W1's one row (40 + 2000 floats) is smaller than W1 (2,400), W2's (60 + 2000)
     * is not smaller than W2 (1,440), whose gradient stays whole */
    cfg.batch_size = 2000;
    CHECK_EQ_INT(tile_bytes(60, 40, 2000), 4u * (40 + 2000));
    CHECK_EQ_INT(tile_bytes(24, 60, 2000), 0);
    CHECK_STATUS(mt_plan(mlp_model->img, mlp_model->bytes, &cfg, &plan), MT_OK);
    CHECK_EQ_INT(plan.tiled_updates, 1);
    CHECK_EQ_INT(plan.weight_tile_bytes, 4u * (40 + 2000));
    CHECK_EQ_INT(plan.gradient_bytes, 4u * (40 + 2000) + round16(60 * 4) + 24 * 60 * 4 + round16(24 * 4));
}

/* ---- the guard ---- */

static void test_guard_refuses_before_any_tile(const model *mlp_model)
{
    /* SGD with decay: w - lr·(g + wd·w) = w·(1 - lr·wd) - lr·g. One weight of W1's last row at
     * 3e38 (its unit's tanh saturates, so the loss stays finite) gives 3e38·(1 - 2.5) = -4.5e38:
     * the last tile's update overflows, every other element's is finite. */
    mt_train_config cfg = config_for(mlp_model, 0, MT_REDUCTION_MEAN, 0);
    cfg.learning_rate = 5.0f, cfg.weight_decay = 0.5f;
    sess a;
    CHECK_STATUS(sess_open(&a, mlp_model->img, mlp_model->bytes, &cfg), MT_OK);
    mt_param_info w1;
    CHECK_STATUS(mt_session_param(a.s, 0, &w1), MT_OK);
    CHECK(w1.trained && w1.count == 60 * 40);
    w1.data[59 * 40 + 3] = 3e38f;
    float before[4][2400];
    int32_t counts[4];
    for (int p = 0; p < 4; p++) {
        const float *w = param_data(a.s, p, &counts[p]); /* sets counts[p] first */
        memcpy(before[p], w, 4u * (size_t)counts[p]);
    }

    float loss = 0.f;
    feed(a.s, mlp_model, BATCH, 5u);
    CHECK_STATUS(mt_session_train_step(a.s, BATCH, &loss), MT_ERR_NUMERIC);
    CHECK(isfinite(loss));
    int64_t errors = 0, step = 0;
    mt_session_numeric_errors(a.s, &errors);
    mt_session_counters(a.s, &step, NULL);
    CHECK_EQ_INT(errors, 1);
    CHECK_EQ_INT(step, 1); /* W2 and b2 took this step's update */
    mt_error_detail where;
    mt_session_last_error(a.s, &where);
    CHECK_EQ_INT(where.op_index, 0);
    CHECK_EQ_INT(where.tensor_index, 1);
    int32_t n;
    /* no element of W1 changed, not even its first tiles', whose updates were finite */
    CHECK(memcmp(param_data(a.s, 0, &n), before[0], 4u * (size_t)counts[0]) == 0);
    CHECK(memcmp(param_data(a.s, 1, &n), before[1], 4u * (size_t)counts[1]) == 0); /* b1: not reached */
    CHECK(memcmp(param_data(a.s, 2, &n), before[2], 4u * (size_t)counts[2]) != 0); /* W2 */
    CHECK(memcmp(param_data(a.s, 3, &n), before[3], 4u * (size_t)counts[3]) != 0); /* b2 */
    free(a.block);
}

int main(void)
{
    model models[3] = {
        {"mlp", NULL, 0, 40, 24, MT_LOSS_MSE, 2},
        {"mlp, first layer frozen", NULL, 0, 40, 24, MT_LOSS_MSE, 1},
        {"cnn", NULL, 0, 72, 12, MT_LOSS_CATEGORICAL_CROSSENTROPY, 1},
    };
    models[0].img = mlp(0, &models[0].bytes);
    models[1].img = mlp(1, &models[1].bytes);
    models[2].img = cnn(&models[2].bytes);
    test_tiled_equals_buffered(models, 3);
    test_plan_holds_one_tile(&models[0]);
    test_guard_refuses_before_any_tile(&models[0]);
    for (int k = 0; k < 3; k++) free(models[k].img);
    return MT_TEST_END();
}
