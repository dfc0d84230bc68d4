/*
 * The boundary between the float and the int8 parts of a model (TFLite's QUANTIZE and
 * DEQUANTIZE of float tensors), per tensor:
 *   QUANTIZE    y = clamp(round(x / scale) + zero_point, -128, 127)   round: half away from 0
 *   DEQUANTIZE  y = scale · (x - zero_point)
 * params[0] = scale as f32 bits, params[1] = zero point (as i32), equal to the int8 tensor's
 * quantization record.
 *
 * Backward (ops/quant_grad.h: an int8 activation's gradient is f32, with respect to its
 * dequantized value), so a float layer inside an int8 model trains through the int8 ops after it:
 *   QUANTIZE    dx += dy where -128 <= round(x / scale) + zp <= 127 (the forward's value before
 *               its clamp: torch.fake_quantize_per_tensor_affine's straight-through gradient)
 *   DEQUANTIZE  dx += dy
 */
#include <string.h>

#include "ops/quant_grad.h"

static float param_f32(uint32_t bits)
{
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Round half away from zero of a float (C's roundf, which the core does not take from a libm),
 * converted to int32 with saturation; NaN gives INT32_MIN, what an x86 conversion gives. */
static int32_t round_to_i32(float v)
{
    if (!(v > -2147483648.0f)) return INT32_MIN; /* also NaN */
    if (v >= 2147483648.0f) return INT32_MAX;
    int32_t t = (int32_t)v;                      /* truncates toward zero */
    const float frac = v - (float)t;             /* exact for |v| < 2^31 */
    if (frac >= 0.5f) ++t;
    else if (frac <= -0.5f) --t;
    return t;
}

/* y[i] = clamp(round(x[i] / scale) + zp): TFLite's reference AffineQuantize, which divides in
 * float (the scale as a float) and rounds with std::round. */
void mt_op_quantize_f32_s8(const float *x, int8_t *y, size_t N, float scale, int32_t zero_point)
{
    for (size_t i = 0; i < N; ++i) {
        const int64_t q = (int64_t)round_to_i32(x[i] / scale) + zero_point;
        y[i] = (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
    }
}

void mt_op_quantize_f32_s8_backward(const float *x, const float *dy, float *dx, size_t N, float scale,
                                    int32_t zero_point)
{
    for (size_t i = 0; i < N; ++i) {
        const int64_t q = (int64_t)round_to_i32(x[i] / scale) + zero_point; /* as the forward */
        if (q >= -128 && q <= 127) dx[i] += dy[i];
    }
}

/* y[i] = scale · (x[i] - zp). TFLite multiplies in double and rounds to float; the product of a
 * 24-bit significand and an integer of at most 9 bits is exact in both, so one float multiply
 * rounds it the same way. */
void mt_op_dequantize_s8_f32(const int8_t *x, float *y, size_t N, float scale, int32_t zero_point)
{
    for (size_t i = 0; i < N; ++i) y[i] = (float)((int32_t)x[i] - zero_point) * scale;
}

/* x (dtype from) -> y (dtype to), same element count; params agree with the int8 side. */
static mt_status boundary_check(const mt_image *img, const mt_op_desc *op, uint32_t from, uint32_t to)
{
    if (op->num_inputs != 1 || op->num_outputs != 1) return MT_ERR_BAD_MODEL;
    if (op->params[2] != 0 || op->params[3] != 0) return MT_ERR_BAD_MODEL;
    mt_tensor_desc x, y;
    mt_image_tensor(img, op->inputs[0], &x);
    mt_image_tensor(img, op->outputs[0], &y);
    if (x.dtype != from || y.dtype != to || x.count != y.count) return MT_ERR_SHAPE;
    if (x.flags & MT_TENSOR_CONST) return MT_ERR_UNSUPPORTED;
    float scale;
    int32_t zero_point;
    if (mt_q_per_tensor(img, from == MT_DTYPE_I8 ? &x : &y, &scale, &zero_point) != MT_OK) return MT_ERR_SHAPE;
    if (op->params[0] == 0 || param_f32(op->params[0]) != scale || (int32_t)op->params[1] != zero_point)
        return MT_ERR_BAD_MODEL;
    return MT_OK;
}

static mt_status quantize_check(const mt_image *img, const mt_op_desc *op)
{
    return boundary_check(img, op, MT_DTYPE_F32, MT_DTYPE_I8);
}

static mt_status dequantize_check(const mt_image *img, const mt_op_desc *op)
{
    return boundary_check(img, op, MT_DTYPE_I8, MT_DTYPE_F32);
}

static void quantize_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_op_quantize_f32_s8(x->data, mt_q_s8_out(&t[op->outputs[0]]), (size_t)n * x->count,
                          param_f32(op->params[0]), (int32_t)op->params[1]);
}

static void dequantize_forward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_op_dequantize_s8_f32(mt_q_s8(x), t[op->outputs[0]].mutable_data, (size_t)n * x->count,
                            param_f32(op->params[0]), (int32_t)op->params[1]);
}

static void quantize_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_op_quantize_f32_s8_backward(x->data, t[op->outputs[0]].grad, x->grad, (size_t)n * x->count,
                                   param_f32(op->params[0]), (int32_t)op->params[1]);
}

static void dequantize_backward(const mt_op_desc *op, mt_tensor_rt *t, uint32_t n, float *scratch)
{
    (void)scratch;
    const mt_tensor_rt *x = &t[op->inputs[0]];
    mt_kernel_add_f32_accumulate(t[op->outputs[0]].grad, x->grad, (size_t)n * x->count);
}

const mt_op_kernel mt_kernel_quantize = {quantize_check, mt_no_scratch, quantize_forward, quantize_backward,
                                         mt_q_reads_input, 0};
const mt_op_kernel mt_kernel_dequantize = {dequantize_check, mt_no_scratch, dequantize_forward, dequantize_backward,
                                           mt_reads_nothing, 0};
