/*
 * CMSIS-NN's int8 kernels on the layers of benchmarks/int8_zoo.py, for benchmarks/cmsis_nn_ops.py:
 * each layer's call between two calls of mt_op_profile_mark(), the profile program's marks, so
 * the insn_count plugin counts it as the region 1 + 3·op of that zoo op, the same region the
 * per-op table (benchmarks/arm_int8_ops.py) reads for microtrain's kernel. The layer table
 * (cmsis_nn_layers.h, written by cmsis_nn_ops.py) gives the shapes, strides, paddings and zero
 * points; the data are pseudo-random bytes and requantization constants of a MobileNetV2's
 * magnitudes (the kernels' paths follow the shapes and the clamp, the whole int8 range here,
 * not the values), set before the marks, as is what TF-Lite Micro's Prepare would make: the
 * scratch buffers and, on Helium, the FullyConnected's weight sums (arm_vector_sum_s8). The
 * FullyConnected's 1.28 MB of weights do not fit the RAM: they are a constant array in flash
 * (zeros but its first byte, which keeps it out of .bss). Nothing checks the outputs: a cost
 * benchmark of CMSIS-NN's code, not a test of it. Built only with MT_CMSIS_NN_DIR
 * (boards/app/CMakeLists.txt).
 */
#include <stdint.h>
#include <string.h>

#include "arm_nnfunctions.h"
#include "mt_board.h"

enum { CONV = 1, DEPTHWISE = 2, FULLY_CONNECTED = 3, ADD = 4, AVERAGE_POOL = 5 };

typedef struct cmsis_nn_layer {
    int32_t kind, region;          /* the zoo op's forward region, 1 + 3·op */
    int32_t h, w, c, oc, k, stride; /* input [h, w, c], output channels, kernel k x k */
    int32_t pad_h, pad_w, oh, ow;  /* padding before (TFLite SAME's), output size */
    int32_t x_zp, y_zp;
} cmsis_nn_layer;

#include "cmsis_nn_layers.h" /* CMSIS_NN_LAYERS, CMSIS_NN_ARENA_BYTES, CMSIS_NN_FLASH_WEIGHT_BYTES */

static const cmsis_nn_layer layers[] = CMSIS_NN_LAYERS;
static int8_t arena[CMSIS_NN_ARENA_BYTES] __attribute__((aligned(16)));
static const int8_t flash_weights[CMSIS_NN_FLASH_WEIGHT_BYTES] __attribute__((aligned(16))) = {1};

#define MARKS 1024u
volatile uint32_t mt_fw_profile_marks[MARKS];
void mt_op_profile_mark(uint32_t region);
__attribute__((noinline)) void mt_op_profile_mark(uint32_t region)
{
    mt_fw_profile_marks[region % MARKS] = region;
}

static uint32_t state = 12345u;
static void fill(int8_t *p, size_t n)
{
    for (size_t i = 0; i < n; ++i) state = state * 1664525u + 1013904223u, p[i] = (int8_t)(state >> 24);
}

/* per-channel constants of a MobileNetV2's magnitude: a multiplier in [2^30, 2^31), shift -6..-9 */
static void constants(int32_t *bias, int32_t *multiplier, int32_t *shift, int32_t n)
{
    for (int32_t i = 0; i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        bias[i] = (int32_t)(state >> 20) - 2048;
        multiplier[i] = (int32_t)(0x40000000u | (state & 0x3fffffffu));
        shift[i] = -6 - (int32_t)(state >> 30);
    }
}

/* n bytes of the arena from *at on (16-aligned) */
static void *take(size_t *at, size_t n)
{
    void *p = arena + *at;
    *at += (n + 15u) & ~(size_t)15u;
    if (*at > sizeof arena) {
        static const char message[] = "cmsis_nn_layers: the arena is too small\n";
        for (const char *m = message; *m; ++m) mt_board_putc(*m);
        mt_board_exit(2);
    }
    return p;
}

static int run(const cmsis_nn_layer *l)
{
    size_t at = 0;
    const cmsis_nn_activation full = {-128, 127};
    const cmsis_nn_dims in = {1, l->h, l->w, l->c}, out = {1, l->oh, l->ow, l->oc};
    int8_t *x = take(&at, (size_t)l->h * l->w * l->c), *y = take(&at, (size_t)l->oh * l->ow * l->oc);
    fill(x, (size_t)l->h * l->w * l->c);
    int32_t *bias = take(&at, 4u * (size_t)l->oc), *mult = take(&at, 4u * (size_t)l->oc);
    int32_t *shift = take(&at, 4u * (size_t)l->oc);
    constants(bias, mult, shift, l->oc);
    const cmsis_nn_dims bias_dims = {1, 1, 1, l->oc};
    cmsis_nn_per_channel_quant_params quant = {mult, shift};
    cmsis_nn_context ctx = {NULL, 0};
    arm_cmsis_nn_status status = ARM_CMSIS_NN_SUCCESS;
    if (l->kind == CONV) {
        const cmsis_nn_conv_params p = {-l->x_zp, l->y_zp, {l->stride, l->stride}, {l->pad_w, l->pad_h}, {1, 1}, full};
        const cmsis_nn_dims filter = {l->oc, l->k, l->k, l->c};
        int8_t *w = take(&at, (size_t)l->oc * l->k * l->k * l->c);
        fill(w, (size_t)l->oc * l->k * l->k * l->c);
        ctx.size = arm_convolve_wrapper_s8_get_buffer_size(&p, &in, &filter, &out);
        ctx.buf = ctx.size ? take(&at, (size_t)ctx.size) : NULL;
        mt_op_profile_mark((uint32_t)l->region);
        status = arm_convolve_wrapper_s8(&ctx, &p, &quant, &in, x, &filter, w, &bias_dims, bias, &out, y);
    } else if (l->kind == DEPTHWISE) {
        const cmsis_nn_dw_conv_params p = {-l->x_zp, l->y_zp, 1, {l->stride, l->stride}, {l->pad_w, l->pad_h},
                                           {1, 1}, full};
        const cmsis_nn_dims filter = {1, l->k, l->k, l->c};
        int8_t *w = take(&at, (size_t)l->k * l->k * l->c);
        fill(w, (size_t)l->k * l->k * l->c);
        ctx.size = arm_depthwise_conv_wrapper_s8_get_buffer_size(&p, &in, &filter, &out);
        ctx.buf = ctx.size ? take(&at, (size_t)ctx.size) : NULL;
        mt_op_profile_mark((uint32_t)l->region);
        status = arm_depthwise_conv_wrapper_s8(&ctx, &p, &quant, &in, x, &filter, w, &bias_dims, bias, &out, y);
    } else if (l->kind == FULLY_CONNECTED) {
        const cmsis_nn_fc_params p = {-l->x_zp, 0, l->y_zp, full};
        const cmsis_nn_per_tensor_quant_params q = {mult[0], shift[0]};
        const cmsis_nn_dims fin = {1, 1, 1, l->c}, filter = {l->c, 1, 1, l->oc}, fout = {1, 1, 1, l->oc};
        ctx.size = arm_fully_connected_s8_get_buffer_size(&filter);
        ctx.buf = ctx.size ? take(&at, (size_t)ctx.size) : NULL;
        if (ctx.buf) /* Helium: the weight sums, made once as TF-Lite Micro's Prepare makes them */
            arm_vector_sum_s8(ctx.buf, l->c, l->oc, flash_weights, -l->x_zp, 0, bias);
        mt_op_profile_mark((uint32_t)l->region);
        status = arm_fully_connected_s8(&ctx, &p, &q, &fin, x, &filter, flash_weights, &bias_dims, bias, &fout, y);
    } else if (l->kind == ADD) {
        int8_t *b = take(&at, (size_t)l->h * l->w * l->c);
        fill(b, (size_t)l->h * l->w * l->c);
        mt_op_profile_mark((uint32_t)l->region);
        status = arm_elementwise_add_s8(x, b, -l->x_zp, 0x5a000000, -1, -l->x_zp, 0x60000000, -1, 20, y, l->y_zp,
                                        0x55000000, -19, -128, 127, l->h * l->w * l->c);
    } else if (l->kind == AVERAGE_POOL) { /* the Mean over H and W as CMSIS-NN has it: one window */
        const cmsis_nn_pool_params p = {{l->k, l->k}, {0, 0}, full};
        const cmsis_nn_dims filter = {1, l->k, l->k, 1};
        ctx.size = arm_avgpool_s8_get_buffer_size(l->ow, l->c);
        ctx.buf = ctx.size ? take(&at, (size_t)ctx.size) : NULL;
        mt_op_profile_mark((uint32_t)l->region);
        status = arm_avgpool_s8(&ctx, &p, &in, x, &filter, &out, y);
    }
    mt_op_profile_mark(0u);
    return status == ARM_CMSIS_NN_SUCCESS;
}

int main(void)
{
    mt_board_init();
    int failed = 0;
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; ++i) failed |= !run(&layers[i]);
    static const char done[] = "cmsis_nn_layers: done\n", bad[] = "cmsis_nn_layers: a kernel refused its arguments\n";
    for (const char *m = failed ? bad : done; *m; ++m) mt_board_putc(*m);
    mt_board_exit(failed ? 1 : 0);
}
