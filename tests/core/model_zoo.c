/*
 * model_zoo: convolutional test models built with image_builder, shared by the tests
 * (test_cnn_graph, test_planner). Weights are seeded, so every build is identical.
 */
#include "model_zoo.h"

#include "microtrain.h"
#include "mt_test.h"


static float wbuf[IB_MAX_FLOATS];

/* a CONST TRAINABLE tensor with weights uniform in [center - scale, center + scale) */
static int weights_at(ib_model *m, int ndim, int32_t d0, int32_t d1, int32_t d2, int32_t d3, float center,
                      float scale)
{
    const int32_t d[4] = { d0, d1, d2, d3 };
    int count = 1;
    for (int i = 0; i < ndim; i++) count *= d[i];
    for (int i = 0; i < count; i++) wbuf[i] = center + mt_test_uniform(-scale, scale);
    return ib_tensor(m, MT_DTYPE_F32, MT_TENSOR_CONST | MT_TENSOR_TRAINABLE, ndim, d, wbuf);
}

static int weights(ib_model *m, int ndim, int32_t d0, int32_t d1, int32_t d2, int32_t d3, float scale)
{
    return weights_at(m, ndim, d0, d1, d2, d3, 0.0f, scale);
}

static int activation(ib_model *m, int ndim, int32_t d0, int32_t d1, int32_t d2)
{
    const int32_t d[3] = { d0, d1, d2 };
    return ib_tensor(m, MT_DTYPE_F32, 0, ndim, d, NULL);
}

static int op1(ib_model *m, int type, int x, int y)
{
    return ib_op(m, type, 1, &x, 1, &y);
}

static int op3(ib_model *m, int type, int a, int b, int c, int y)
{
    const int in[3] = { a, b, c };
    return ib_op(m, type, c < 0 && type != MT_OP_CONV2D && type != MT_OP_DEPTHWISE_CONV2D ? 2 : 3, in, 1, &y);
}

/* a model's start: its builder reset, the weights' seed, and one NHWC input x[h,w,c] */
static int begin(ib_model *m, uint32_t seed, int32_t h, int32_t w, int32_t c)
{
    ib_init(m);
    mt_test_seed(seed);
    const int32_t xd[3] = { h, w, c };
    int x = ib_tensor(m, MT_DTYPE_F32, MT_TENSOR_INPUT, 3, xd, NULL);
    ib_input(m, x);
    return x;
}

/* Conv2D or DepthwiseConv2D (bias b, or -1 for none) of x into a new activation [h,w,c] */
static int conv(ib_model *m, int type, int x, int w, int b, int32_t h, int32_t wd, int32_t c, int32_t stride,
                uint32_t padding, uint32_t fused)
{
    int y = activation(m, 3, h, wd, c);
    ib_spatial_params(m, op3(m, type, x, w, b, y), 0, 0, stride, stride, padding, fused);
    return y;
}

/* ... -> GAP -> Dense(classes) -> Softmax (the output) */
static void head(ib_model *m, int feature_map, int channels, int classes)
{
    int g = activation(m, 1, channels, 0, 0);
    op1(m, MT_OP_GLOBAL_AVERAGE_POOL, feature_map, g);
    int w = weights(m, 2, classes, channels, 0, 0, 0.5f), b = weights(m, 1, classes, 0, 0, 0, 0.1f);
    int z = activation(m, 1, classes, 0, 0), p = activation(m, 1, classes, 0, 0);
    op3(m, MT_OP_DENSE, g, w, b, z);
    op1(m, MT_OP_SOFTMAX, z, p);
    m->tensors[p].flags |= MT_TENSOR_OUTPUT;
    ib_output(m, p);
}

/* x[8,8,1] -> Conv 3x3x8 SAME relu -> MaxPool 2 -> Conv 3x3x16 VALID relu -> GAP -> Dense 10 -> Softmax */
uint8_t *mz_digits_cnn(size_t *bytes)
{
    static ib_model m;
    int x = begin(&m, 31337u, 8, 8, 1);
    int w1 = weights(&m, 4, 8, 3, 3, 1, 0.6f), b1 = weights(&m, 1, 8, 0, 0, 0, 0.1f);
    int y1 = conv(&m, MT_OP_CONV2D, x, w1, b1, 8, 8, 8, 1, MT_PADDING_SAME, MT_FUSED_RELU);
    int y2 = activation(&m, 3, 4, 4, 8);
    ib_spatial_params(&m, op1(&m, MT_OP_MAX_POOL2D, y1, y2), 2, 2, 2, 2, MT_PADDING_VALID, 0);
    int w2 = weights(&m, 4, 16, 3, 3, 8, 0.3f), b2 = weights(&m, 1, 16, 0, 0, 0, 0.1f);
    int y3 = conv(&m, MT_OP_CONV2D, y2, w2, b2, 2, 2, 16, 1, MT_PADDING_VALID, MT_FUSED_RELU);
    head(&m, y3, 16, 10);
    return ib_build(&m, bytes);
}

/* x[6,6,2] -> Conv 3x3x4 SAME relu -> y1 -> Depthwise 3x3 SAME relu6 -> y2; Add(y1, y2) -> y3;
 * Concatenation(y3, y1) -> [6,6,8] -> GAP -> Dense 5 -> Softmax */
uint8_t *mz_residual_dag(size_t *bytes)
{
    static ib_model m;
    int x = begin(&m, 4242u, 6, 6, 2);
    /* biases near 1 and 2 keep most pre-activations away from the kinks, not all of them */
    int w1 = weights(&m, 4, 4, 3, 3, 2, 0.5f), b1 = weights_at(&m, 1, 4, 0, 0, 0, 1.0f, 0.1f);
    int y1 = conv(&m, MT_OP_CONV2D, x, w1, b1, 6, 6, 4, 1, MT_PADDING_SAME, MT_FUSED_RELU);
    int w2 = weights(&m, 4, 1, 3, 3, 4, 0.5f), b2 = weights_at(&m, 1, 4, 0, 0, 0, 2.0f, 0.1f);
    int y2 = conv(&m, MT_OP_DEPTHWISE_CONV2D, y1, w2, b2, 6, 6, 4, 1, MT_PADDING_SAME, MT_FUSED_RELU6);
    int y3 = activation(&m, 3, 6, 6, 4), y4 = activation(&m, 3, 6, 6, 8);
    op3(&m, MT_OP_ADD, y1, y2, -1, y3);
    op3(&m, MT_OP_CONCATENATION, y3, y1, -1, y4);
    head(&m, y4, 8, 5);
    return ib_build(&m, bytes);
}


static int frozen(ib_model *m, int32_t count, float center, float scale)
{
    for (int i = 0; i < count; i++) wbuf[i] = center + mt_test_uniform(-scale, scale);
    return ib_tensor(m, MT_DTYPE_F32, MT_TENSOR_CONST, 1, &count, wbuf);
}

/* axis k of y is axis perm[k] of x (docs/model_format.md, TRANSPOSE) */
static uint32_t perm3(uint32_t p0, uint32_t p1, uint32_t p2)
{
    return p0 | p1 << 4 | p2 << 8;
}

uint8_t *mz_layout_graph(size_t *bytes)
{
    static ib_model m;
    int x = begin(&m, 5151u, 3, 6, 6);
    int t0 = activation(&m, 3, 6, 6, 3);
    ib_op_params(&m, op1(&m, MT_OP_TRANSPOSE, x, t0), perm3(1, 2, 0), 0, 0, 0);
    int centred = activation(&m, 3, 6, 6, 3), scaled = activation(&m, 3, 6, 6, 3);
    op3(&m, MT_OP_SUB, t0, frozen(&m, 3, 0.0f, 0.2f), -1, centred);
    op3(&m, MT_OP_MUL, frozen(&m, 3, 1.0f, 0.5f), centred, -1, scaled); /* the constant first */
    int padded = activation(&m, 3, 7, 7, 3);
    ib_op_params(&m, op1(&m, MT_OP_PAD, scaled, padded), 1u, 1u << 16, 0, 0);
    int w1 = weights(&m, 4, 4, 3, 3, 3, 0.5f), b1 = weights_at(&m, 1, 4, 0, 0, 0, 1.0f, 0.1f);
    int y1 = conv(&m, MT_OP_CONV2D, padded, w1, b1, 3, 3, 4, 2, MT_PADDING_VALID, MT_FUSED_RELU);
    int w2 = weights(&m, 4, 1, 3, 3, 4, 0.5f);
    int y2 = conv(&m, MT_OP_DEPTHWISE_CONV2D, y1, w2, -1, 3, 3, 4, 1, MT_PADDING_SAME, 0);
    int product = activation(&m, 3, 3, 3, 4), difference = activation(&m, 3, 3, 3, 4);
    op3(&m, MT_OP_MUL, y1, y2, -1, product);
    op3(&m, MT_OP_SUB, product, y1, -1, difference);
    int chw = activation(&m, 3, 4, 3, 3), hwc = activation(&m, 3, 3, 3, 4);
    ib_op_params(&m, op1(&m, MT_OP_TRANSPOSE, difference, chw), perm3(2, 0, 1), 0, 0, 0);
    ib_op_params(&m, op1(&m, MT_OP_TRANSPOSE, chw, hwc), perm3(1, 2, 0), 0, 0, 0);
    head(&m, hwc, 4, 5);
    return ib_build(&m, bytes);
}
