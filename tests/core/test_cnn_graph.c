/*
 * Convolutional models as whole sessions, built with image_builder:
 *   (a) a digits-sized CNN  x[8,8,1] -> Conv 3x3x8 SAME relu -> MaxPool 2 -> Conv 3x3x16 VALID relu
 *       -> GlobalAveragePool -> Dense 10 -> Softmax: plan/init, Adam reduces the loss, a partial
 *       batch is bitwise a smaller batch, and the whole-model gradient matches finite differences;
 *   (b) a residual DAG  x -> Conv -> y1 -> DepthwiseConv -> y2; Add(y1, y2) -> y3;
 *       Concatenation(y3, y1) -> GAP -> Dense -> Softmax: the same gradient check, and training
 *       only the last Dense plans fewer gradient and activation-gradient bytes;
 *   (c) the image validator rejects bad spatial and op params with the documented status.
 *
 * Whole-model gradient: a session with plain SGD, lr = 1 and MEAN reduction accumulates
 * n rows and steps once, so Δw = -(1/n)·Σ_i ∂loss_i/∂w = -∂L/∂w where L is the loss that
 * mt_session_eval_step() reports for the same rows. A second session (same image) gives
 * L(w ± h e_k) through mt_session_param() data, and (L+ - L-)/2h must match -Δw_k. The loss is
 * float and the models have ReLU kinks and max-pool ties, so each point is differenced at
 * h = 1e-2, 3e-3 and 1e-3: if those disagree among themselves a kink lies within reach and the
 * point is skipped (at most a fifth of them may be); else the h = 3e-3 one must match within
 * 5e-4 + 2 %. The residual DAG is also checked element by element against an exact
 * double-precision model of it (differences at h = 1e-6 in double), to float accuracy.
 * Glossary: B = batch size, n = valid rows.
 */
#include <math.h>
#include <stdlib.h>

#include "image_builder.h"
#include "model_zoo.h"
#include "microtrain.h"
#include "mt_test.h"

#define FD_ABS 5e-4 /* central differences of the float session loss */
#define FD_REL 2e-2

/* ---- sessions ---------------------------------------------------------------------------------- */

typedef struct owned {
    void *block;
    mt_session *s;
    mt_memory_plan plan;
} owned;

static mt_status open_session(owned *o, const uint8_t *img, size_t bytes, const mt_train_config *cfg)
{
    memset(o, 0, sizeof *o);
    mt_status st = mt_plan(img, bytes, cfg, &o->plan);
    if (st != MT_OK) return st;
    o->block = malloc(o->plan.total_bytes + MT_ARENA_ALIGN);
    uint8_t *arena = (uint8_t *)o->block + (MT_ARENA_ALIGN - (uintptr_t)o->block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    return mt_session_init(&o->s, img, bytes, cfg, arena, o->plan.total_bytes);
}

static void close_session(owned *o)
{
    free(o->block);
    o->block = NULL, o->s = NULL;
}

static void config(mt_train_config *cfg, int optimizer, int batch, float lr)
{
    mt_train_config_init(cfg);
    cfg->optimizer = optimizer, cfg->batch_size = batch, cfg->learning_rate = lr;
    cfg->loss = MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
}

/* rows of inputs uniform in [lo, hi) and labels below classes, from seed */
static void fill_batch(mt_session *s, int rows, int classes, float lo, float hi, unsigned seed)
{
    float *x;
    void *t;
    int32_t count, bytes;
    mt_test_seed(seed);
    CHECK_STATUS(mt_session_input(s, 0, &x, &count), MT_OK);
    CHECK_STATUS(mt_session_target(s, &t, &bytes), MT_OK);
    for (int i = 0; i < count; i++) x[i] = mt_test_uniform(lo, hi);
    for (int i = 0; i < rows && 4 * i < bytes; i++) ((int32_t *)t)[i] = (int32_t)(mt_test_rand_u32() % (unsigned)classes);
}

/* weights the session computes with: the arena copy, or the image's for frozen ones */
static float *param(mt_session *s, int p, int32_t *count, int *trained)
{
    mt_param_info info;
    *count = 0, *trained = 0; /* defined outputs even on failure */
    if (mt_session_param(s, p, &info) != MT_OK) return NULL;
    *count = info.count, *trained = info.trained;
    return info.trained ? info.data : (float *)(uintptr_t)info.image_data;
}

static int params_bitwise_equal(mt_session *a, mt_session *b)
{
    int32_t na = 0, nb = 0;
    mt_session_param_count(a, &na), mt_session_param_count(b, &nb);
    if (na != nb) return 0;
    for (int p = 0; p < na; p++) {
        int32_t ca = 0, cb = 0;
        int ta = 0, tb = 0;
        const float *wa = param(a, p, &ca, &ta), *wb = param(b, p, &cb, &tb);
        if (!wa || !wb || ca != cb || memcmp(wa, wb, sizeof(float) * (size_t)ca) != 0) return 0;
    }
    return 1;
}

/*
 * The residual DAG in double, straight from its definition: the mean sparse cross-entropy
 * of n rows. w holds the six weight tensors back to back (W1 [4,3,3,2], b1, Wd [1,3,3,4], bd,
 * Wf [5,8], bf) at offsets o[]. Its central differences with h = 1e-6 are the exact
 * gradient to ~1e-8, so the session's gradient must match it to float accuracy.
 */
static double dag_reference_loss(const double *w, const int *o, const float *x, const int32_t *labels, int n)
{
    double total = 0;
    for (int b = 0; b < n; b++) {
        static double y1[6][6][4], y4[6][6][8];
        double gap[8] = { 0 }, z[5], zmax = -1e300, sum = 0;
        for (int dw = 0; dw <= 1; dw++) /* the convolution, then the depthwise one */
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++)
                    for (int c = 0; c < 4; c++) {
                        double v = w[o[1 + 2 * dw] + c];
                        for (int kh = 0; kh < 3; kh++)
                            for (int kw = 0; kw < 3; kw++) {
                                int ih = i + kh - 1, iw = j + kw - 1; /* SAME, stride 1: pad 1 */
                                if (ih < 0 || ih >= 6 || iw < 0 || iw >= 6) continue;
                                if (dw) v += y1[ih][iw][c] * w[o[2] + (kh * 3 + kw) * 4 + c];
                                else
                                    for (int ci = 0; ci < 2; ci++)
                                        v += x[((b * 6 + ih) * 6 + iw) * 2 + ci] * w[o[0] + ((c * 3 + kh) * 3 + kw) * 2 + ci];
                            }
                        if (!dw) y1[i][j][c] = v < 0 ? 0 : v;
                        else y4[i][j][c] = y1[i][j][c] + (v < 0 ? 0 : v > 6 ? 6 : v), y4[i][j][c + 4] = y1[i][j][c];
                    }
        for (int i = 0; i < 36; i++)
            for (int c = 0; c < 8; c++) gap[c] += y4[i / 6][i % 6][c] / 36.0;
        for (int u = 0; u < 5; u++) {
            z[u] = w[o[5] + u];
            for (int c = 0; c < 8; c++) z[u] += gap[c] * w[o[4] + u * 8 + c];
            zmax = fmax(zmax, z[u]);
        }
        for (int u = 0; u < 5; u++) sum += exp(z[u] - zmax);
        total += log(sum) - (z[labels[b]] - zmax);
    }
    return total / n;
}

typedef double (*reference_fn)(const double *w, const int *o, const float *x, const int32_t *labels, int n);

/*
 * The whole-model gradient of the session loss against central differences, at `picks`
 * spread-out elements of every trained weight tensor (all elements when fewer).
 */
static void check_model_gradient(const char *name, const uint8_t *img, size_t bytes, int batch, int n,
                                 int classes, int picks, reference_fn reference)
{
    mt_train_config cfg;
    owned g, e;
    config(&cfg, MT_OPTIMIZER_SGD, batch, 1.0f);
    cfg.accumulate_gradients = 1; /* keep the gradients for accumulate / optimizer_step */
    if (!CHECK_STATUS(open_session(&g, img, bytes, &cfg), MT_OK) ||
        !CHECK_STATUS(open_session(&e, img, bytes, &cfg), MT_OK))
        return;
    fill_batch(g.s, n, classes, -1.f, 1.f, 777u);
    fill_batch(e.s, n, classes, -1.f, 1.f, 777u);
    int32_t np = 0;
    CHECK_STATUS(mt_session_param_count(g.s, &np), MT_OK);
    static float before[IB_MAX_FLOATS];
    int offset[16], total = 0, checked = 0, skipped = 0;
    for (int p = 0; p < np && p < 16; p++) { /* keep the weights, take one SGD step, read Δw */
        int32_t count;
        int trained;
        float *w = param(g.s, p, &count, &trained);
        offset[p] = total;
        memcpy(before + total, w, sizeof(float) * (size_t)count);
        total += count;
    }
    float loss_acc, loss_eval;
    CHECK_STATUS(mt_session_zero_grad(g.s), MT_OK);
    CHECK_STATUS(mt_session_accumulate(g.s, n, &loss_acc), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_OK);
    CHECK_STATUS(mt_session_eval_step(e.s, n, &loss_eval), MT_OK);
    CHECK_BITS_EQ(loss_eval, loss_acc); /* the same rows, the same weights, the same loss */
    for (int p = 0; p < np && p < 16; p++) {
        int32_t count = 0;
        int trained = 0;
        float *w = param(e.s, p, &count, &trained);
        const float *after = param(g.s, p, &count, &trained);
        if (!trained) continue;
        int step = count > picks ? count / picks : 1;
        for (int k = (p * 7) % step; k < count; k += step) {
            double grad = (double)before[offset[p] + k] - (double)after[k]; /* -Δw = ∂L/∂w */
            /* central differences at three steps; where they disagree among themselves a kink or
             * a max-pool tie lies within ±1e-2 and the point is skipped (counted below) */
            static const float steps[3] = { 1e-2f, 3e-3f, 1e-3f };
            double fd[3];
            for (int h = 0; h < 3; h++) {
                float saved = w[k], up = saved + steps[h], down = saved - steps[h], lp, lm;
                w[k] = up;
                CHECK_STATUS(mt_session_eval_step(e.s, n, &lp), MT_OK);
                w[k] = down;
                CHECK_STATUS(mt_session_eval_step(e.s, n, &lm), MT_OK);
                w[k] = saved;
                fd[h] = ((double)lp - (double)lm) / ((double)up - (double)down);
            }
            const double tol = FD_ABS + FD_REL * fabs(fd[1]);
            if (fmax(fd[0], fmax(fd[1], fd[2])) - fmin(fd[0], fmin(fd[1], fd[2])) > tol) {
                skipped++;
                continue;
            }
            if (!CHECK_NEAR(grad, fd[1], tol))
                printf("    %s: param %d element %d\n", name, p, k);
            checked++;
        }
    }
    if (!CHECK(checked >= picks && skipped * 4 <= checked)) printf("    %s: %d checked, %d skipped\n", name, checked, skipped);
    float again;
    CHECK_STATUS(mt_session_eval_step(e.s, n, &again), MT_OK);
    CHECK_BITS_EQ(again, loss_eval); /* every perturbation was undone */

    /* every element against the exact double-precision model, when there is one */
    static double wd[IB_MAX_FLOATS];
    float *x;
    void *labels;
    int32_t xc, lb;
    if (reference && mt_session_input(e.s, 0, &x, &xc) == MT_OK && mt_session_target(e.s, &labels, &lb) == MT_OK) {
        int bad = 0;
        for (int i = 0; i < total; i++) wd[i] = before[i];
        CHECK_NEAR(reference(wd, offset, x, (const int32_t *)labels, n), loss_eval, 1e-5);
        for (int p = 0; p < np && p < 16; p++) {
            int32_t count;
            int trained;
            const float *after = param(g.s, p, &count, &trained);
            for (int k = 0; k < count; k++) {
                double *v = &wd[offset[p] + k], saved = *v, grad = (double)before[offset[p] + k] - after[k];
                *v = saved + 1e-6;
                double lp = reference(wd, offset, x, (const int32_t *)labels, n);
                *v = saved - 1e-6;
                double lm = reference(wd, offset, x, (const int32_t *)labels, n);
                *v = saved;
                double fd = (lp - lm) / 2e-6;
                if (fabs(grad - fd) > 2e-6 + 1e-4 * fabs(fd) && bad++ < 8)
                    printf("    %s param %d element %d: session %.9g, exact %.9g\n", name, p, k, grad, fd);
            }
        }
        CHECK_EQ_INT(bad, 0);
    }
    close_session(&g), close_session(&e);
}

/* ---- (a) the digits CNN --------------------------------------------------------------------------- */

static void test_digits_plan(const uint8_t *img, size_t bytes)
{
    mt_model_info info;
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_session *s;
    CHECK_STATUS(mt_model_check(img, bytes, &info), MT_OK);
    CHECK_EQ_INT(info.num_ops, 6);
    CHECK_EQ_INT(info.num_params, 6);
    CHECK_EQ_INT(info.param_count, 72 + 8 + 1152 + 16 + 160 + 10);
    mt_tensor_info t;
    CHECK_STATUS(mt_model_tensor(img, bytes, 3, &t), MT_OK); /* y1 [8, 8, 8], written by op 0 */
    CHECK_EQ_INT(t.count, 512), CHECK_EQ_INT(t.producer, 0);
    config(&cfg, MT_OPTIMIZER_ADAM, 8, 0.01f);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
    size_t sum = plan.metadata_bytes + plan.weight_bytes + plan.gradient_bytes + plan.optimizer_bytes +
                 plan.activation_bytes + plan.activation_grad_bytes + plan.io_bytes + plan.scratch_bytes -
                 plan.reuse_bytes;
    CHECK_EQ_INT(sum, plan.total_bytes);
    CHECK(plan.lower_bound_bytes <= plan.total_bytes);
    CHECK_EQ_INT(plan.weight_bytes, 288 + 32 + 4608 + 64 + 640 + 48); /* each tensor 16-aligned */
    CHECK(plan.optimizer_bytes >= 2u * 4u * 1418u);                    /* Adam: m and v */
    CHECK_EQ_INT(plan.num_trained_params, 6);
    CHECK_EQ_INT(plan.first_trained_op, 0);
    CHECK_EQ_INT(plan.io_bytes, 32); /* 8 int32 labels */
    CHECK(plan.activation_bytes >= 8 * 4 * (size_t)(64 + 512)); /* at least the input and y1 */
    uint8_t *block = malloc(plan.total_bytes + MT_ARENA_ALIGN);
    uint8_t *arena = block + (MT_ARENA_ALIGN - (uintptr_t)block % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes - MT_ARENA_ALIGN),
                 MT_ERR_ARENA_TOO_SMALL);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena, plan.total_bytes), MT_OK);
    float *x;
    int32_t count;
    const float *y;
    CHECK_STATUS(mt_session_input(s, 0, &x, &count), MT_OK);
    CHECK_EQ_INT(count, 8 * 64);
    CHECK_STATUS(mt_session_output(s, 0, &y, &count), MT_OK);
    CHECK_EQ_INT(count, 8 * 10);
    fill_batch(s, 8, 10, 0.f, 1.f, 5u);
    CHECK_STATUS(mt_session_infer(s, 8), MT_OK);
    for (int r = 0; r < 8; r++) { /* softmax rows */
        double total = 0;
        for (int k = 0; k < 10; k++) total += y[r * 10 + k];
        CHECK_NEAR(total, 1.0, 1e-5);
    }
    free(block);
}

static void test_digits_training(const uint8_t *img, size_t bytes)
{
    mt_train_config cfg;
    owned o;
    config(&cfg, MT_OPTIMIZER_ADAM, 8, 0.02f);
    if (!CHECK_STATUS(open_session(&o, img, bytes, &cfg), MT_OK)) return;
    fill_batch(o.s, 8, 10, 0.f, 1.f, 99u);
    float first, loss, last = 0;
    CHECK_STATUS(mt_session_eval_step(o.s, 8, &first), MT_OK);
    for (int step = 0; step < 30; step++) CHECK_STATUS(mt_session_train_step(o.s, 8, &loss), MT_OK);
    CHECK_STATUS(mt_session_eval_step(o.s, 8, &last), MT_OK);
    if (!CHECK(last < 0.7f * first)) printf("    loss %g -> %g\n", (double)first, (double)last);
    int64_t steps;
    CHECK_STATUS(mt_session_counters(o.s, &steps, NULL), MT_OK);
    CHECK_EQ_INT(steps, 30);
    close_session(&o);
}

/* batch 4 with n = 3 (row 3 holds garbage) against batch 3: the same bits, step after step */
static void test_digits_partial_batch(const uint8_t *img, size_t bytes)
{
    mt_train_config c4, c3;
    owned a, b;
    config(&c4, MT_OPTIMIZER_ADAM, 4, 0.01f);
    config(&c3, MT_OPTIMIZER_ADAM, 3, 0.01f);
    if (!CHECK_STATUS(open_session(&a, img, bytes, &c4), MT_OK) ||
        !CHECK_STATUS(open_session(&b, img, bytes, &c3), MT_OK))
        return;
    float *xa, *xb;
    void *va, *vb;
    int32_t na, nb, bytes_a, bytes_b;
    mt_session_input(a.s, 0, &xa, &na), mt_session_input(b.s, 0, &xb, &nb);
    mt_session_target(a.s, &va, &bytes_a), mt_session_target(b.s, &vb, &bytes_b);
    int32_t *ta = (int32_t *)va, *tb = (int32_t *)vb;
    CHECK_EQ_INT(na, 4 * 64), CHECK_EQ_INT(nb, 3 * 64);
    for (int step = 0; step < 3; step++) {
        mt_test_seed(1000u + (unsigned)step);
        for (int i = 0; i < nb; i++) xa[i] = xb[i] = mt_test_uniform(0.f, 1.f);
        for (int i = nb; i < na; i++) xa[i] = 1e3f * mt_test_uniform(-1.f, 1.f); /* ignored row */
        for (int r = 0; r < 3; r++) ta[r] = tb[r] = (int32_t)(mt_test_rand_u32() % 10u);
        ta[3] = 7;
        float la, lb;
        CHECK_STATUS(mt_session_train_step(a.s, 3, &la), MT_OK);
        CHECK_STATUS(mt_session_train_step(b.s, 3, &lb), MT_OK);
        CHECK_BITS_EQ(la, lb);
        CHECK(params_bitwise_equal(a.s, b.s));
    }
    const float *ya, *yb;
    int32_t ca, cb;
    CHECK_STATUS(mt_session_infer(a.s, 3), MT_OK);
    CHECK_STATUS(mt_session_infer(b.s, 3), MT_OK);
    mt_session_output(a.s, 0, &ya, &ca), mt_session_output(b.s, 0, &yb, &cb);
    CHECK(memcmp(ya, yb, sizeof(float) * 30) == 0);
    close_session(&a), close_session(&b);
}

/* ---- (b) the residual DAG -------------------------------------------------------------------------- */

static void test_dag_trainable_tail(const uint8_t *img, size_t bytes)
{
    mt_train_config all, tail;
    mt_memory_plan pa, pt;
    config(&all, MT_OPTIMIZER_SGD, 4, 0.1f);
    tail = all;
    tail.num_trainable_ops = 2; /* Dense and Softmax: only Dense has weights */
    CHECK_STATUS(mt_plan(img, bytes, &all, &pa), MT_OK);
    CHECK_STATUS(mt_plan(img, bytes, &tail, &pt), MT_OK);
    CHECK_EQ_INT(pa.num_trained_params, 6);
    CHECK_EQ_INT(pt.num_trained_params, 2);
    CHECK_EQ_INT(pa.first_trained_op, 0);
    CHECK_EQ_INT(pt.first_trained_op, 5);
    CHECK(pt.gradient_bytes < pa.gradient_bytes);
    CHECK(pt.activation_grad_bytes < pa.activation_grad_bytes);
    CHECK(pt.total_bytes < pa.total_bytes);
    CHECK_EQ_INT(pt.gradient_bytes, 5 * 8 * 4 + 32); /* W [5, 8] and b [5] (20 -> 32 bytes) */

    /* a step of the tail session moves the Dense weights only */
    owned o;
    if (!CHECK_STATUS(open_session(&o, img, bytes, &tail), MT_OK)) return;
    fill_batch(o.s, 4, 5, -1.f, 1.f, 3u);
    CHECK_STATUS(mt_session_train_step(o.s, 4, NULL), MT_OK);
    int32_t np;
    mt_session_param_count(o.s, &np);
    CHECK_EQ_INT(np, 6);
    for (int p = 0; p < np; p++) {
        mt_param_info info;
        CHECK_STATUS(mt_session_param(o.s, p, &info), MT_OK);
        CHECK_EQ_INT(info.trained, p >= 4);
        if (info.trained)
            CHECK(memcmp(info.data, info.image_data, sizeof(float) * (size_t)info.count) != 0);
    }
    close_session(&o);
}

/* ---- (c) the validator on spatial and op params ------------------------------------------------------ */

/* One op x -> y with an optional CONST weight (dims wd, ndim 4 or 2) and the given params. */
static mt_status check_one(int type, const int32_t *xd, int xnd, const int32_t *wd, int wnd, const int32_t *yd,
                           int ynd, uint32_t p0, uint32_t p1, uint32_t p2, uint32_t p3)
{
    static ib_model m;
    size_t bytes;
    ib_init(&m);
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, xnd, xd, NULL);
    int w = wd ? ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, wnd, wd, NULL) : -1;
    int y = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, ynd, yd, NULL);
    const int in[2] = { x, w };
    ib_op_params(&m, ib_op(&m, type, wd ? 2 : 1, in, 1, &y), p0, p1, p2, p3);
    ib_input(&m, x), ib_output(&m, y);
    uint8_t *img = ib_build(&m, &bytes);
    mt_status st = mt_model_check(img, bytes, NULL);
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_train_config_init(&cfg);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), st); /* the planner validates the same way */
    free(img);
    return st;
}


/* Mul/Sub with operand b an activation (flags 0) or a constant (MT_TENSOR_CONST, maybe TRAINABLE) */
static mt_status check_binary(int type, const int32_t *xd, int xnd, const int32_t *bd, int bnd, int bflags,
                              const int32_t *yd, int ynd, int b_first)
{
    static ib_model m;
    static const float data[64];
    size_t bytes;
    ib_init(&m);
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, xnd, xd, NULL);
    int b = ib_tensor(&m, MT_DTYPE_F32, bflags ? bflags : MT_TENSOR_INPUT, bnd, bd, data);
    int y = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, ynd, yd, NULL);
    const int in[2] = { b_first ? b : x, b_first ? x : b };
    ib_op(&m, type, 2, in, 1, &y);
    ib_input(&m, x), ib_output(&m, y);
    if (!bflags) ib_input(&m, b);
    uint8_t *img = ib_build(&m, &bytes);
    mt_status st = mt_model_check(img, bytes, NULL);
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_train_config_init(&cfg);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), st);
    free(img);
    return st;
}

static void test_validator_layout_ops(void)
{
    const int32_t x5[3] = { 5, 5, 2 }, padded[3] = { 6, 7, 2 }, chw[3] = { 2, 5, 5 }, f50[1] = { 50 };
    const int32_t c2[1] = { 2 }, c1[1] = { 1 }, c3[1] = { 3 }, c22[2] = { 1, 2 }, x4[3] = { 5, 4, 2 };
    const uint32_t T1 = 1u, L1R1 = 1u | 1u << 16, P201 = 2u | 0u << 4 | 1u << 8;
    /* Pad: top 1, left 1, right 1 */
    CHECK_STATUS(check_one(MT_OP_PAD, x5, 3, NULL, 0, padded, 3, T1, L1R1, 0, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_PAD, x5, 3, NULL, 0, padded, 3, T1 << 16, L1R1, 0, 0), MT_OK); /* bottom 1 */
    CHECK_STATUS(check_one(MT_OP_PAD, x5, 3, NULL, 0, padded, 3, 0, L1R1, 0, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_PAD, x5, 3, NULL, 0, padded, 3, 0xFFFFFFFFu, L1R1, 0, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_PAD, x5, 3, NULL, 0, padded, 3, T1, L1R1, 1, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_PAD, f50, 1, NULL, 0, f50, 1, 0, 0, 0, 0), MT_ERR_SHAPE); /* not [H, W, C] */
    /* Transpose: a permutation of the sample's axes, y's dims follow it */
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, chw, 3, P201, 0, 0, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, x5, 3, 0x210u, 0, 0, 0), MT_OK); /* identity */
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, x5, 3, 0, 0, 0, 0), MT_ERR_BAD_MODEL); /* 0, 0, 0 */
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, chw, 3, P201 | 3u << 12, 0, 0, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, chw, 3, 2u | 3u << 4 | 1u << 8, 0, 0, 0),
                 MT_ERR_BAD_MODEL); /* axis 3 of a 3-D sample */
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, x5, 3, P201, 0, 0, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x5, 3, NULL, 0, chw, 3, P201, 1, 0, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_TRANSPOSE, x4, 3, NULL, 0, chw, 3, P201, 0, 0, 0), MT_ERR_SHAPE);
    /* Mul / Sub: two activations of one shape, or a frozen constant [C] or [1] on either side */
    for (int type = MT_OP_MUL; type <= MT_OP_SUB; type++) {
        CHECK_STATUS(check_binary(type, x5, 3, x5, 3, 0, x5, 3, 0), MT_OK);
        CHECK_STATUS(check_binary(type, x5, 3, c2, 1, MT_TENSOR_CONST, x5, 3, 0), MT_OK);
        CHECK_STATUS(check_binary(type, x5, 3, c1, 1, MT_TENSOR_CONST, x5, 3, 1), MT_OK);
        CHECK_STATUS(check_binary(type, x5, 3, x4, 3, 0, x5, 3, 0), MT_ERR_SHAPE); /* no broadcasting */
        CHECK_STATUS(check_binary(type, x5, 3, c3, 1, MT_TENSOR_CONST, x5, 3, 0), MT_ERR_SHAPE);
        CHECK_STATUS(check_binary(type, x5, 3, c22, 2, MT_TENSOR_CONST, x5, 3, 0), MT_ERR_SHAPE);
        CHECK_STATUS(check_binary(type, x5, 3, c2, 1, MT_TENSOR_CONST, chw, 3, 0), MT_ERR_SHAPE);
        CHECK_STATUS(check_binary(type, x5, 3, c2, 1, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, x5, 3, 0),
                     MT_ERR_UNSUPPORTED); /* a constant operand is not trained */
    }
}

static void test_validator(void)
{
    const int32_t x5[3] = { 5, 5, 2 }, x3[3] = { 3, 3, 2 }, y3[3] = { 3, 3, 4 }, y3c[3] = { 3, 3, 2 };
    const int32_t wc[4] = { 4, 3, 3, 2 }, wdw[4] = { 1, 3, 3, 2 }, wdw2[4] = { 2, 3, 3, 2 };
    const int32_t y4[3] = { 4, 4, 4 }, y33[3] = { 3, 3, 3 }, p1[3] = { 1, 1, 2 }, p2[3] = { 2, 2, 2 };
    const int32_t f50[1] = { 50 }, wd[2] = { 3, 50 }, f3[1] = { 3 }, x5f[1] = { 50 };
    const uint32_t S11 = 1u | 1u << 16, S22 = 2u | 2u << 16, K22 = 2u | 2u << 16, K44 = 4u | 4u << 16;
    uint32_t alpha;
    float a;
    /* valid baselines: the rejections below are the params' doing */
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0, S11, MT_PADDING_VALID, MT_FUSED_RELU), MT_OK);
    CHECK_STATUS(check_one(MT_OP_DEPTHWISE_CONV2D, x5, 3, wdw, 4, y3c, 3, 0, S22, MT_PADDING_SAME, 2), MT_OK);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, p2, 3, K22, S22, MT_PADDING_VALID, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_AVERAGE_POOL2D, x3, 3, NULL, 0, p2, 3, K22, S22, MT_PADDING_SAME, 0), MT_OK);
    /* strides 0 (both, or one axis) */
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0, 0, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0, 1u, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, p2, 3, K22, 0, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    /* padding 3 (no such code), explicit pads (2) on a convolution (pools only), fused activation 3 */
    CHECK_STATUS(check_one(MT_OP_AVERAGE_POOL2D, x5, 3, NULL, 0, p2, 3, K22, S22, 3, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0, S11, MT_PADDING_EXPLICIT, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_DEPTHWISE_CONV2D, x5, 3, wdw, 4, y3c, 3, 0, S22, MT_PADDING_EXPLICIT, 0x01010101u),
                 MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0, S11, MT_PADDING_VALID, 3), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_DEPTHWISE_CONV2D, x5, 3, wdw, 4, y3c, 3, 0, S22, MT_PADDING_SAME, 3),
                 MT_ERR_BAD_MODEL);
    /* a pool takes no activation; a convolution takes its window from W, not params[0] */
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, p2, 3, K22, S22, MT_PADDING_VALID, 1),
                 MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0x00030003u, S11, MT_PADDING_VALID, 0),
                 MT_ERR_BAD_MODEL);
    /* a window larger than the input under VALID (fine under SAME); an empty window */
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x3, 3, NULL, 0, p1, 3, K44, S11, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_AVERAGE_POOL2D, x3, 3, NULL, 0, y3c, 3, K44, S11, MT_PADDING_SAME, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x3, 3, NULL, 0, y3c, 3, 0, S11, MT_PADDING_SAME, 0), MT_ERR_SHAPE);
    /* explicit pads in params[3] (top | bottom << 8 | left << 16 | right << 24): 5 x 5 with a 3 x 3
     * window at stride 2 and one on every side gives 3 x 3 (neither SAME's nor VALID's windows);
     * without pads, VALID's; a window of padding alone (top 3 >= K, or a last window starting
     * past the input) is refused, as is a y of another size */
    const uint32_t K33 = 3u | 3u << 16, PADS1 = 0x01010101u, E = MT_PADDING_EXPLICIT;
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, y3c, 3, K33, S22, E, PADS1), MT_OK);
    CHECK_STATUS(check_one(MT_OP_AVERAGE_POOL2D, x5, 3, NULL, 0, y3c, 3, K33, S22, E, PADS1), MT_OK);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, p2, 3, K22, S22, E, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, p2, 3, K33, S22, E, PADS1), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, y3c, 3, K33, S22, E, 0x01010103u), MT_ERR_SHAPE);
    const int32_t y32[3] = { 3, 2, 2 }, K11 = 1u | 1u << 16;
    CHECK_STATUS(check_one(MT_OP_AVERAGE_POOL2D, x3, 3, NULL, 0, p2, 3, K11, S22, E, 0x00000100u), MT_OK);
    CHECK_STATUS(check_one(MT_OP_AVERAGE_POOL2D, x3, 3, NULL, 0, y32, 3, K11, S22, E, 0x00000200u),
                 MT_ERR_SHAPE); /* rows: 3 + 2 after at stride 2, the third window all padding */
    /* output shapes that disagree with the geometry */
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y4, 3, 0, S11, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y33, 3, 0, S11, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_CONV2D, x5, 3, wc, 4, y3, 3, 0, S11, MT_PADDING_SAME, 0), MT_ERR_SHAPE);
    CHECK_STATUS(check_one(MT_OP_MAX_POOL2D, x5, 3, NULL, 0, p1, 3, K22, S22, MT_PADDING_VALID, 0), MT_ERR_SHAPE);
    /* depthwise: W [2, KH, KW, C] is not depth multiplier 1 */
    CHECK_STATUS(check_one(MT_OP_DEPTHWISE_CONV2D, x5, 3, wdw2, 4, y3c, 3, 0, S22, MT_PADDING_SAME, 0),
                 MT_ERR_SHAPE);
    /* non-zero params on ops that take none */
    CHECK_STATUS(check_one(MT_OP_DENSE, x5f, 1, wd, 2, f3, 1, 0, 0, 0, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_DENSE, x5f, 1, wd, 2, f3, 1, 0, S11, 0, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_RELU, f50, 1, NULL, 0, f50, 1, 0, 0, 0, 1), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_RELU6, f50, 1, NULL, 0, f50, 1, 1, 0, 0, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_GLOBAL_AVERAGE_POOL, x5, 3, NULL, 0, p1 + 2, 1, 0, 0, 1, 0), MT_ERR_BAD_MODEL);
    CHECK_STATUS(check_one(MT_OP_GLOBAL_AVERAGE_POOL, x5, 3, NULL, 0, p1 + 2, 1, 0, 0, 0, 0), MT_OK);
    /* LeakyReLU: α >= 0 and finite; other params zero */
    a = 0.2f, memcpy(&alpha, &a, 4);
    CHECK_STATUS(check_one(MT_OP_LEAKY_RELU, f50, 1, NULL, 0, f50, 1, alpha, 0, 0, 0), MT_OK);
    CHECK_STATUS(check_one(MT_OP_LEAKY_RELU, f50, 1, NULL, 0, f50, 1, alpha, 0, 1, 0), MT_ERR_BAD_MODEL);
    a = -0.1f, memcpy(&alpha, &a, 4);
    CHECK_STATUS(check_one(MT_OP_LEAKY_RELU, f50, 1, NULL, 0, f50, 1, alpha, 0, 0, 0), MT_ERR_UNSUPPORTED);
    a = NAN, memcpy(&alpha, &a, 4);
    CHECK_STATUS(check_one(MT_OP_LEAKY_RELU, f50, 1, NULL, 0, f50, 1, alpha, 0, 0, 0), MT_ERR_UNSUPPORTED);
    CHECK_STATUS(check_one(MT_OP_LEAKY_RELU, f50, 1, NULL, 0, f50, 1, 0, 0, 0, 0), MT_OK); /* α = 0 */
}

int main(void)
{
    size_t digits_bytes, dag_bytes;
    uint8_t *digits = mz_digits_cnn(&digits_bytes), *dag = mz_residual_dag(&dag_bytes);
    test_digits_plan(digits, digits_bytes);
    test_digits_training(digits, digits_bytes);
    test_digits_partial_batch(digits, digits_bytes);
    check_model_gradient("digits", digits, digits_bytes, 4, 3, 10, 12, NULL);
    CHECK_STATUS(mt_model_check(dag, dag_bytes, NULL), MT_OK);
    check_model_gradient("residual", dag, dag_bytes, 4, 4, 5, 16, dag_reference_loss);
    test_dag_trainable_tail(dag, dag_bytes);
    test_validator();
    test_validator_layout_ops();
    size_t layout_bytes;
    uint8_t *layout = mz_layout_graph(&layout_bytes);
    CHECK_STATUS(mt_model_check(layout, layout_bytes, NULL), MT_OK);
    check_model_gradient("layout", layout, layout_bytes, 4, 3, 5, 16, NULL);
    free(digits), free(dag), free(layout);
    return MT_TEST_END();
}
