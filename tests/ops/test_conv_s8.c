/*
 * CONV2D_S8 and DEPTHWISE_CONV2D_S8's backward (ops/conv_s8.c, the straight-through estimator of
 * ops/quant_grad.h): the mask against the forward run with a widened clamp, dx bit for bit
 * against the float Conv2D's and DepthwiseConv2D's reference backward on the dequantized
 * weights, and central finite differences of the fake-quantized layer's surrogate
 * (int8_gradcheck_util.h's check_layer), VALID and SAME, strides 1 and 2. Their forward:
 * LiteRT's kernels (tests/ops/test_conv_s8.py) and the kernel table's int8 cases
 * (boards/app/siblings_s8.c, run by tests/core/test_int8_siblings.c).
 *
 * The planner's in-place depthwise (MT_OPF_IN_PLACE, mt_op_depthwise_s8_in_place_forward):
 * its output laid over its input with a band of KH rows after the samples gives the
 * whole-tensor kernel's bits, and touches nothing past the band; two planted faults show the
 * comparison can fail: the whole kernel run over its own input (no band), and the input laid
 * one row off where the output is planned. The overlapped Conv2D (MT_OVER_SHIFTED,
 * mt_op_conv2d_s8_rows_forward): its output d bytes before its input (d from the planner's
 * formula, plan_lifetimes.c) gives the whole kernel's bits; starting halfway into its input,
 * over rows not yet read, it does not. Each at
 * every kernel level this machine runs.
 */
#include "int8_gradcheck_util.h"
#include "kernel_levels_util.h"
#include "ops/quant.h"

/* x, w, bias, rq as tensors 0..3, y as 4, all of them over `buf` for x and y */
static void in_place_tensors(layer *l, int8_t *buf, mt_tensor_rt *t, mt_op_desc *op)
{
    memset(t, 0, 5 * sizeof *t);
    memset(op, 0, sizeof *op);
    const uint32_t dims[3] = {l->g.H, l->g.W, l->g.C};
    for (int k = 0; k < 5; k += 4) {
        t[k].data = t[k].mutable_data = (float *)(void *)buf;
        memcpy(t[k].dims, dims, sizeof dims);
        t[k].count = l->g.H * l->g.W * l->g.C, t[k].dtype = MT_DTYPE_I8;
    }
    t[1].data = (const float *)(const void *)l->w;
    t[1].dims[0] = 1, t[1].dims[1] = l->g.KH, t[1].dims[2] = l->g.KW, t[1].dims[3] = l->g.C;
    t[2].data = (const float *)(const void *)l->bias;
    t[3].data = (const float *)(const void *)l->rq;
    op->type = MT_OP_DEPTHWISE_CONV2D_S8, op->num_inputs = 4, op->num_outputs = 1, op->flags = MT_OPF_IN_PLACE;
    for (uint16_t k = 0; k < 4; ++k) op->inputs[k] = k;
    op->outputs[0] = 4;
    op->params[0] = packed_of(l->zx, l->zy, LO, HI);
    op->params[1] = 1u | 1u << 16;
    op->params[2] = MT_PADDING_SAME;
}

/* the planner's shift of an overlapped Conv2D's input after its output (plan_lifetimes.c) */
static int64_t overlap_shift(const mt_spatial *g, uint32_t B)
{
    const int64_t last_b = (int64_t)(B - 1u) * ((int64_t)g->OH * g->OW * g->OC - (int64_t)g->H * g->W * g->C);
    int64_t d = 0;
    for (uint32_t oh = 0; oh < g->OH; ++oh) {
        const int64_t r0 = (int64_t)oh * g->SH - g->PT;
        const int64_t need = (int64_t)(oh + 1u) * g->OW * g->OC - (r0 > 0 ? r0 : 0) * (int64_t)g->W * g->C;
        if (need > d) d = need;
        if (need + last_b > d) d = need + last_b;
    }
    return d;
}

static int differing(const int8_t *a, const int8_t *b, uint32_t n)
{
    int d = 0;
    for (uint32_t i = 0; i < n; ++i) d += a[i] != b[i];
    return d;
}

/* Returns how many outputs differ when the whole kernel runs over its own input without the
 * band (the first planted fault). */
static int check_in_place(const char *name, uint32_t B, uint32_t H, uint32_t W, uint32_t C, uint32_t K)
{
    static layer l;
    static int8_t ref[MAXE], buf[2 * MAXE];
    memset(&l, 0, sizeof l);
    l.kind = LAYER_DEPTHWISE, l.B = B;
    l.g.H = l.g.OH = H, l.g.W = l.g.OW = W, l.g.C = l.g.OC = C, l.g.KH = l.g.KW = K, l.g.SH = l.g.SW = 1;
    l.g.PT = l.g.PL = (K - 1u) / 2u; /* SAME at stride 1 */
    make_layer(&l, LAYER_DEPTHWISE);
    const uint32_t N = out_count(&l), band = K * W * C;
    forward_s8(&l, ref, LO, HI); /* the whole-tensor kernel, y apart from x */
    mt_tensor_rt t[5];
    mt_op_desc op;

    memset(buf, 0x5A, sizeof buf);
    memcpy(buf, l.x, N);
    in_place_tensors(&l, buf, t, &op);
    mt_op_depthwise_s8_in_place_forward(&op, t, B);
    const int wrong = differing(buf, ref, N);
    int outside = 0; /* bytes past the band: untouched */
    for (uint32_t i = N + band; i < sizeof buf; ++i) outside += buf[i] != 0x5A;
    printf("  %s in place: %u outputs, %d differ, %d bytes touched past the band\n", name, N, wrong, outside);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(outside, 0);

    /* planted: the whole kernel over its own input, no band */
    memcpy(buf, l.x, N);
    mt_kernel_depthwise_conv2d_s8_forward(buf, l.w, l.bias, l.rq, buf, B, &l.g, op.params[0]);
    const int unbanded = differing(buf, ref, N);
    /* planted: the input one row after the place the output is planned over */
    memcpy(buf + W * C, l.x, N);
    mt_op_depthwise_s8_in_place_forward(&op, t, B);
    const int shifted = differing(buf, ref, N);
    printf("  %s planted: %d differ without the band, %d with the input a row off\n", name, unbanded, shifted);
    /* the band's need depends on the kernel: one that copies a channel group's rows into its
     * planes before writing that group's outputs (the DSP cores' planes, at C a multiple of 4)
     * computes this shape right without it; the caller checks that some shape needs it */
    CHECK(shifted > 0);
    return unbanded;
}

static void check_rows(const char *name, uint32_t B, uint32_t H, uint32_t W, uint32_t C, uint32_t OC, uint32_t K,
                       uint32_t S)
{
    static layer l;
    static int8_t ref[MAXE], buf[3 * MAXE];
    memset(&l, 0, sizeof l);
    l.kind = LAYER_CONV2D, l.B = B;
    l.g.H = H, l.g.W = W, l.g.C = C, l.g.OC = OC, l.g.KH = l.g.KW = K, l.g.SH = l.g.SW = S;
    CHECK_STATUS(mt_spatial_axis(H, K, S, MT_PADDING_SAME, &l.g.OH, &l.g.PT), MT_OK);
    CHECK_STATUS(mt_spatial_axis(W, K, S, MT_PADDING_SAME, &l.g.OW, &l.g.PL), MT_OK);
    make_layer(&l, LAYER_CONV2D);
    const uint32_t N = out_count(&l), I = in_count(&l);
    forward_s8(&l, ref, LO, HI);
    const int64_t d = overlap_shift(&l.g, B);
    mt_tensor_rt t[5];
    mt_op_desc op;
    memset(buf, 0x5A, sizeof buf);
    in_place_tensors(&l, buf, t, &op);
    op.type = MT_OP_CONV2D_S8;
    op.params[1] = S | S << 16;
    t[1].dims[0] = OC;
    t[4].dims[0] = l.g.OH, t[4].dims[1] = l.g.OW, t[4].dims[2] = OC;
    t[0].data = t[0].mutable_data = (float *)(void *)(buf + d);
    memcpy(buf + d, l.x, I);
    mt_op_conv2d_s8_rows_forward(&op, t, B);
    const int wrong = differing(buf, ref, N);
    /* planted: the output from the middle of the input on, over rows not yet read */
    t[0].data = t[0].mutable_data = (float *)(void *)buf;
    t[4].mutable_data = (float *)(void *)(buf + I / 2u);
    memcpy(buf, l.x, I);
    mt_op_conv2d_s8_rows_forward(&op, t, B);
    const int planted = differing(buf + I / 2u, ref, N);
    printf("  %s overlapped by %lld bytes: %u outputs in %lld bytes instead of %u, %d differ; "
           "planted halfway into the input: %d differ\n", name, (long long)d, N, (long long)(d + I > N ? d + I : N), N + I, wrong,
           planted);
    CHECK_EQ_INT(wrong, 0);
    CHECK(d < (int64_t)N); /* smaller than the two apart */
    CHECK(planted > 0);
}

int main(void)
{
    mt_test_seed(40);
    check_layer("conv2d_s8 3x3 SAME stride 2", LAYER_CONV2D, 6, 5, 3, 4, 3, 2, 1);
    check_layer("conv2d_s8 2x2 VALID stride 1", LAYER_CONV2D, 4, 4, 2, 3, 2, 1, 0);
    check_layer("depthwise_conv2d_s8 3x3 SAME", LAYER_DEPTHWISE, 5, 6, 4, 4, 3, 1, 1);
    check_layer("depthwise_conv2d_s8 3x3 VALID stride 2", LAYER_DEPTHWISE, 7, 5, 3, 3, 3, 2, 0);
    for (int level = 0; level < MT_KERNEL_LEVELS; ++level) {
        if (!use_kernel_level(level)) continue;
        printf(" kernel level %d\n", level);
        /* planted: without the band, at least one of these shapes goes wrong at every level */
        const int unbanded = check_in_place("depthwise_conv2d_s8 3x3", 1, 9, 7, 5, 3)
                             + check_in_place("depthwise_conv2d_s8 3x3 batch 3", 3, 6, 5, 8, 3)
                             + check_in_place("depthwise_conv2d_s8 5x5 batch 2", 2, 8, 6, 4, 5);
        CHECK(unbanded > 0);
        check_rows("conv2d_s8 3x3 stride 2 (a first convolution)", 1, 12, 10, 3, 8, 3, 2);
        check_rows("conv2d_s8 3x3 stride 2 batch 2", 2, 8, 6, 3, 8, 3, 2);
        check_rows("conv2d_s8 1x1 (a projection)", 2, 6, 5, 12, 4, 1, 1);
    }
    use_cpu_kernel_level();
    return MT_TEST_END();
}
