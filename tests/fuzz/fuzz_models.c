/* fuzz_models.c: see fuzz_models.h. */
#include "fuzz_models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"

static unsigned rng = 12345u;

static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 16777216.0f - 0.5f;
}

static int weight(ib_model *m, int flags, int ndim, int32_t d0, int32_t d1, int32_t d2, int32_t d3)
{
    const int32_t dims[4] = {d0, d1, d2, d3};
    float data[512];
    int32_t count = 1;
    for (int d = 0; d < ndim; ++d) count *= dims[d];
    for (int32_t i = 0; i < count && i < 512; ++i) data[i] = uniform();
    return ib_tensor(m, MT_DTYPE_F32, MT_TENSOR_CONST | flags, ndim, dims, data);
}

static int act(ib_model *m, int flags, int ndim, int32_t d0, int32_t d1, int32_t d2)
{
    const int32_t dims[4] = {d0, d1, d2, 0};
    return ib_tensor(m, MT_DTYPE_F32, flags, ndim, dims, NULL);
}

static int op1(ib_model *m, int type, int x, int w, int b, int y)
{
    const int in[3] = {x, w, b};
    const int n = w == -2 ? 1 : 3; /* -2: a unary op */
    return ib_op(m, type, n, in, 1, &y);
}

/* a new activation y[d0,d1,d2] (flags: MT_TENSOR_OUTPUT or 0) written by op type(x, w, b) */
static int layer(ib_model *m, int type, int x, int w, int b, int flags, int ndim, int32_t d0, int32_t d1,
                 int32_t d2)
{
    int y = act(m, flags, ndim, d0, d1, d2);
    op1(m, type, x, w, b, y);
    return y;
}

static int unary(ib_model *m, int type, int x, int flags, int ndim, int32_t d0, int32_t d1, int32_t d2)
{
    return layer(m, type, x, -2, -2, flags, ndim, d0, d1, d2);
}

/* a convolution (w, b: its weights, b = -1 for none; pool = 0) or a pooling (w = b = -2, a
 * pool x pool window) of x into a new activation y[h,wd,c] */
static int spatial(ib_model *m, int type, int x, int w, int b, int32_t h, int32_t wd, int32_t c, uint32_t pool,
                   uint32_t stride, uint32_t padding, uint32_t fused)
{
    int y = act(m, 0, 3, h, wd, c);
    ib_spatial_params(m, op1(m, type, x, w, b, y), pool, pool, stride, stride, padding, fused);
    return y;
}

#define T MT_TENSOR_TRAINABLE

/* the classifiers' last layers: Dense(W[units, in], and b[units] if `bias`) of x, then the
 * unary out_op (Softmax, Sigmoid) into the model's output [units] */
static void dense_head(ib_model *m, int x, int32_t in, int32_t units, int bias, int out_op)
{
    int w = weight(m, T, 2, units, in, 0, 0);
    int b = bias ? weight(m, T, 1, units, 0, 0, 0) : -1;
    int z = layer(m, MT_OP_DENSE, x, w, b, 0, 1, units, 0, 0);
    ib_output(m, unary(m, out_op, z, MT_TENSOR_OUTPUT, 1, units, 0, 0));
}

/* conv: x[6,6,2] -> Conv2D(W[4,3,3,2], b; SAME, stride 1, ReLU) -> [6,6,4]
 *   -> DepthwiseConv2D(W[1,3,3,4], b; VALID, ReLU6) -> [4,4,4] -> MaxPool 2x2/2 -> [2,2,4]
 *   -> ReLU6 -> Reshape [16] -> Dense(W[3,16], b) -> Softmax [3] */
static void conv_a(ib_model *m)
{
    int x = act(m, MT_TENSOR_INPUT, 3, 6, 6, 2);
    int w1 = weight(m, T, 4, 4, 3, 3, 2), b1 = weight(m, T, 1, 4, 0, 0, 0);
    int c1 = spatial(m, MT_OP_CONV2D, x, w1, b1, 6, 6, 4, 0, 1, MT_PADDING_SAME, MT_FUSED_RELU);
    int w2 = weight(m, T, 4, 1, 3, 3, 4), b2 = weight(m, 0, 1, 4, 0, 0, 0);
    int c2 = spatial(m, MT_OP_DEPTHWISE_CONV2D, c1, w2, b2, 4, 4, 4, 0, 1, MT_PADDING_VALID, MT_FUSED_RELU6);
    int p = spatial(m, MT_OP_MAX_POOL2D, c2, -2, -2, 2, 2, 4, 2, 2, MT_PADDING_VALID, 0);
    int r6 = unary(m, MT_OP_RELU6, p, 0, 3, 2, 2, 4);
    int flat = unary(m, MT_OP_RESHAPE, r6, 0, 1, 16, 0, 0);
    ib_input(m, x);
    dense_head(m, flat, 16, 3, 1, MT_OP_SOFTMAX);
}

/* conv: x[5,5,3] -> Conv2D(W[2,2,2,3], no bias; SAME, stride 2) -> [3,3,2]
 *   -> AveragePool 2x2/1 SAME -> [3,3,2] -> LeakyReLU(0.1) -> GlobalAveragePool [2]
 *   -> Dense(W[2,2]) -> Sigmoid [2] */
static void conv_b(ib_model *m)
{
    int x = act(m, MT_TENSOR_INPUT, 3, 5, 5, 3);
    int w1 = weight(m, T, 4, 2, 2, 2, 3);
    int c1 = spatial(m, MT_OP_CONV2D, x, w1, -1, 3, 3, 2, 0, 2, MT_PADDING_SAME, MT_FUSED_NONE);
    int p = spatial(m, MT_OP_AVERAGE_POOL2D, c1, -2, -2, 3, 3, 2, 2, 1, MT_PADDING_SAME, 0);
    int l = act(m, 0, 3, 3, 3, 2);
    int o = op1(m, MT_OP_LEAKY_RELU, p, -2, -2, l);
    float alpha = 0.1f;
    uint32_t bits;
    memcpy(&bits, &alpha, 4);
    ib_op_params(m, o, bits, 0, 0, 0);
    int g = unary(m, MT_OP_GLOBAL_AVERAGE_POOL, l, 0, 1, 2, 0, 0);
    ib_input(m, x);
    dense_head(m, g, 2, 2, 0, MT_OP_SIGMOID);
}

/* residual + concat, two inputs:
 *   a[4], b[3] -> Concat [7] -> Dense(W[7,7], b) -> h -> ReLU -> r; Add(r, h) -> s
 *   -> Tanh -> t; Concat(t, a2 = Dense(a)[2]) [9] -> Dense(W[2,9]) -> y (MSE, no activation) */
static void residual(ib_model *m)
{
    int a = act(m, MT_TENSOR_INPUT, 1, 4, 0, 0), b = act(m, MT_TENSOR_INPUT, 1, 3, 0, 0);
    int cat = act(m, 0, 1, 7, 0, 0);
    const int in2[2] = {a, b};
    ib_op(m, MT_OP_CONCATENATION, 2, in2, 1, &cat);
    int w = weight(m, T, 2, 7, 7, 0, 0), bias = weight(m, T, 1, 7, 0, 0, 0);
    int h = layer(m, MT_OP_DENSE, cat, w, bias, 0, 1, 7, 0, 0);
    int r = unary(m, MT_OP_RELU, h, 0, 1, 7, 0, 0);
    int s = act(m, 0, 1, 7, 0, 0);
    const int add_in[2] = {r, h};
    ib_op(m, MT_OP_ADD, 2, add_in, 1, &s);
    int t = unary(m, MT_OP_TANH, s, 0, 1, 7, 0, 0);
    int wa = weight(m, 0, 2, 2, 4, 0, 0);
    int a2 = layer(m, MT_OP_DENSE, a, wa, -1, 0, 1, 2, 0, 0);
    int cat2 = act(m, 0, 1, 9, 0, 0);
    const int in3[2] = {t, a2};
    ib_op(m, MT_OP_CONCATENATION, 2, in3, 1, &cat2);
    int w2 = weight(m, T, 2, 2, 9, 0, 0);
    ib_input(m, a);
    ib_input(m, b);
    ib_output(m, layer(m, MT_OP_DENSE, cat2, w2, -1, MT_TENSOR_OUTPUT, 1, 2, 0, 0));
}

/* 2-D activations: x[2,3] -> Reshape [3,2] -> Softmax (over the last dim) [3,2] -> Reshape [6]
 *   -> Dense(W[4,6], b) -> Sigmoid [4] */
static void reshapes(ib_model *m)
{
    int x = act(m, MT_TENSOR_INPUT, 2, 2, 3, 0);
    int r = unary(m, MT_OP_RESHAPE, x, 0, 2, 3, 2, 0);
    int sm = unary(m, MT_OP_SOFTMAX, r, 0, 2, 3, 2, 0);
    int f = unary(m, MT_OP_RESHAPE, sm, 0, 1, 6, 0, 0);
    ib_input(m, x);
    dense_head(m, f, 6, 4, 1, MT_OP_SIGMOID);
}

/* layout: x[3,4,4] (NCHW) -> Transpose [4,4,3] -> Sub c[3] (frozen) -> Mul s[1] (frozen)
 *   -> Pad (top 1, right 1) [5,5,3] -> Conv2D(W[2,3,3,3], b; VALID, stride 2, ReLU) -> [2,2,2]
 *   -> Mul(a, a) -> Sub(., a) -> Transpose [2,2,2] (1,0,2) -> Reshape [8] -> Dense(W[3,8]) -> Softmax */
static void layout(ib_model *m)
{
    int x = act(m, MT_TENSOR_INPUT, 3, 3, 4, 4);
    int t = act(m, 0, 3, 4, 4, 3);
    ib_op_params(m, op1(m, MT_OP_TRANSPOSE, x, -2, -2, t), 1u | 2u << 4, 0, 0, 0);
    int c = weight(m, 0, 1, 3, 0, 0, 0), s = weight(m, 0, 1, 1, 0, 0, 0);
    int centred = act(m, 0, 3, 4, 4, 3), scaled = act(m, 0, 3, 4, 4, 3);
    const int sub_in[2] = {t, c}, mul_in[2] = {s, centred};
    ib_op(m, MT_OP_SUB, 2, sub_in, 1, &centred);
    ib_op(m, MT_OP_MUL, 2, mul_in, 1, &scaled);
    int padded = act(m, 0, 3, 5, 5, 3);
    ib_op_params(m, op1(m, MT_OP_PAD, scaled, -2, -2, padded), 1u, 1u << 16, 0, 0);
    int w = weight(m, T, 4, 2, 3, 3, 3), b = weight(m, T, 1, 2, 0, 0, 0);
    int a = spatial(m, MT_OP_CONV2D, padded, w, b, 2, 2, 2, 0, 2, MT_PADDING_VALID, MT_FUSED_RELU);
    int squared = act(m, 0, 3, 2, 2, 2), diff = act(m, 0, 3, 2, 2, 2), swapped = act(m, 0, 3, 2, 2, 2);
    const int sq_in[2] = {a, a}, diff_in[2] = {squared, a};
    ib_op(m, MT_OP_MUL, 2, sq_in, 1, &squared);
    ib_op(m, MT_OP_SUB, 2, diff_in, 1, &diff);
    ib_op_params(m, op1(m, MT_OP_TRANSPOSE, diff, -2, -2, swapped), 1u | 0u << 4 | 2u << 8, 0, 0, 0);
    int flat = unary(m, MT_OP_RESHAPE, swapped, 0, 1, 8, 0, 0);
    ib_input(m, x);
    dense_head(m, flat, 8, 3, 0, MT_OP_SOFTMAX);
}

uint8_t *fm_build(int which, size_t *image_bytes, const char **name, int *loss)
{
    static ib_model m; /* ~40 KB: keep it off the stack */
    rng = 12345u + (unsigned)which;
    if (which == 0 || which == 1) {
        ib_mlp_spec spec;
        ib_mlp_defaults(&spec);
        spec.in = which == 0 ? 3 : 6;
        spec.hidden = which == 0 ? 4 : 8;
        spec.out = which == 0 ? 2 : 4;
        spec.hidden_act = which == 0 ? MT_OP_TANH : MT_OP_RELU;
        spec.out_act = which == 0 ? 0 : MT_OP_SOFTMAX;
        spec.frozen_first = which == 1;
        spec.seed = 7u + (unsigned)which;
        *name = which == 0 ? "mlp_tanh_mse" : "mlp_relu_softmax";
        *loss = which == 0 ? MT_LOSS_MSE : MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
        return ib_build_mlp(&spec, image_bytes);
    }
    ib_init(&m);
    switch (which) {
    case 2: conv_a(&m); *name = "conv_depthwise_maxpool"; *loss = MT_LOSS_CATEGORICAL_CROSSENTROPY; break;
    case 3: conv_b(&m); *name = "conv_avgpool_leaky_gap"; *loss = MT_LOSS_BINARY_CROSSENTROPY; break;
    case 4: residual(&m); *name = "residual_concat_two_inputs"; *loss = MT_LOSS_MAE; break;
    case 5: reshapes(&m); *name = "reshape_softmax_2d"; *loss = MT_LOSS_BINARY_CROSSENTROPY; break;
    default: layout(&m); *name = "transpose_pad_mul_sub"; *loss = MT_LOSS_CATEGORICAL_CROSSENTROPY; break;
    }
    return ib_build(&m, image_bytes);
}

void fm_decode_config(const uint8_t *p, mt_train_config *cfg, int32_t *rows, int *poison)
{
    mt_train_config_init(cfg);
    cfg->optimizer = p[0] % 3;
    cfg->loss = p[1] % 5;
    cfg->reduction = p[2] & 1;
    cfg->batch_size = 1 + p[3] % 4;
    cfg->num_trainable_ops = (int32_t)(p[4] % 8) - 1;
    cfg->biases_only = p[5] & 1;
    cfg->momentum = (p[5] & 2) ? 0.9f : 0.0f;
    cfg->weight_decay = (p[5] & 4) ? 0.01f : 0.0f;
    cfg->accumulate_gradients = (p[5] >> 3) & 1;
    *rows = 1 + (p[6] & 0x7F) % cfg->batch_size;
    *poison = (p[6] & 0x80) != 0;
    static const float lr[4] = {0.1f, 0.01f, 0.001f, 0.0001f};
    cfg->learning_rate = lr[p[7] % 4];
}

mt_status fm_plan(const uint8_t *prefix, const uint8_t *img, size_t size, mt_train_config *cfg, int32_t *rows,
                  int *poison, mt_memory_plan *plan)
{
    fm_decode_config(prefix, cfg, rows, poison);
    return mt_plan(img, size, cfg, plan);
}

void fm_encode_config(uint8_t *p, int optimizer, int loss, int batch, int trainable_ops)
{
    memset(p, 0, FM_CONFIG_BYTES);
    p[0] = (uint8_t)optimizer;
    p[1] = (uint8_t)loss;
    p[3] = (uint8_t)(batch - 1);
    p[4] = (uint8_t)(trainable_ops + 1);
    p[6] = (uint8_t)(batch - 1);
    p[7] = 1;
}

void fm_checkpoint_config(int which, mt_train_config *cfg)
{
    mt_train_config_init(cfg);
    cfg->batch_size = 2;
    cfg->loss = MT_LOSS_MSE;
    cfg->optimizer = which >= 2 ? (which == 2 ? MT_OPTIMIZER_ADAM : MT_OPTIMIZER_ADAMW) : MT_OPTIMIZER_SGD;
    cfg->momentum = which == 1 ? 0.9f : 0.0f;
    cfg->weight_decay = which == 3 ? 0.01f : 0.0f;
}

void fm_fill(mt_session *s, int32_t rows, unsigned seed, int poison)
{
    rng = seed ? seed : 1u;
    for (int32_t k = 0;; ++k) {
        float *x;
        int32_t count;
        if (mt_session_input(s, k, &x, &count) != MT_OK) break;
        for (int32_t i = 0; i < count; ++i) x[i] = 2.0f * uniform();
        if (poison && count > 0) x[0] = NAN;
    }
    void *y;
    int32_t bytes;
    if (mt_session_target(s, &y, &bytes) != MT_OK) return;
    const float *out;
    int32_t out_count;
    if (mt_session_output(s, 0, &out, &out_count) != MT_OK) return;
    (void)rows; /* every row is filled: rows past n must not matter */
    if (bytes == 4 * out_count) { /* float targets, [B, D] */
        float *t = y;
        for (int32_t i = 0; i < out_count; ++i) t[i] = uniform() + 0.5f; /* in [0, 1) */
    } else {                        /* int32 labels, [B] */
        int32_t *t = y, B = bytes / 4, D = out_count / (B > 0 ? B : 1); /* labels < D */
        for (int32_t i = 0; i < B; ++i) t[i] = D > 0 ? (int32_t)(rng % (unsigned)D) : 0;
    }
}
