/*
 * The planner's handling of int8 layers trained in place (ops/qas.c, ops/quant_grad.h): which
 * quantized weights may train, and the decoded record an int8 weight or int32 bias keeps in
 * the arena.
 *
 * A trained quantized tensor is an int8 weight (input 1) or an int32 bias (input 2) of one
 * CONV2D_S8, DEPTHWISE_CONV2D_S8 or DENSE_S8, read by that op alone; it lives in the arena at
 * its own width (1 byte a weight, 4 a bias), its gradient is f32 (4 bytes an element, as any
 * gradient), and its record (mt_tensor_rt.opt_state) holds an int8 weight's per-channel
 * scales sw[c] then the input's sx (a frozen int8 weight a gradient passes through keeps its
 * sw[c] alone, as metadata), then SGD's momentum (4 bytes an element) when momentum > 0. A
 * bias keeps its momentum alone: its scales sx·sw[c] are read where the file gives them, in
 * the image (mt_qas_tensor_of), not copied into the arena (4 bytes a channel). The update is SGD with quantization-aware
 * scaling: Adam, AdamW, weight decay and the proximal term are refused (MT_ERR_UNSUPPORTED,
 * naming the tensor), as is a quantized TRAINABLE tensor any other op reads.
 */
#include "microtrain.h"
#include "ops/quant_grad.h"
#include "plan_graph.h"

/* The one op reading quantized tensor `index` as its weight or bias (*k: 1 or 2), or -1 when
 * another op or another input reads it, or an op that is no weighted int8 one */
static int32_t qas_reader(const mt_image *img, uint32_t index, int *k)
{
    const int32_t reader = mt_plan_only_reader(img, index, k);
    if (reader < 0 || (*k != 1 && *k != 2)) return -1;
    mt_op_desc op;
    mt_image_op(img, (uint32_t)reader, &op);
    const int weighted =
        op.type == MT_OP_CONV2D_S8 || op.type == MT_OP_DEPTHWISE_CONV2D_S8 || op.type == MT_OP_DENSE_S8;
    return weighted ? reader : -1;
}

mt_status mt_plan_qas_check(const mt_image *img, const mt_train_config *cfg, const graph_facts *f, int32_t *op_out,
                            int32_t *tensor_out)
{
    for (uint32_t i = 0; i < img->num_tensors; ++i) {
        mt_tensor_desc t;
        mt_image_tensor(img, i, &t);
        if (!bit_get(&f->trained, i) || t.dtype == MT_DTYPE_F32) continue;
        int k = 0;
        const int32_t reader = qas_reader(img, i, &k);
        *op_out = reader, *tensor_out = (int32_t)i;
        if (reader < 0) return MT_ERR_UNSUPPORTED;
        if (cfg->optimizer != MT_OPTIMIZER_SGD || cfg->weight_decay != 0.0f || cfg->proximal_mu != 0.0f)
            return MT_ERR_UNSUPPORTED;
    }
    return MT_OK;
}

/* Channels of quantized trained tensor `index` (its reader's output channels) */
static uint32_t qas_channels(const mt_image *img, uint32_t index)
{
    int k = 0;
    const int32_t reader = qas_reader(img, index, &k);
    mt_op_desc op;
    mt_image_op(img, (uint32_t)reader, &op);
    mt_tensor_desc w;
    mt_image_tensor(img, op.inputs[1], &w);
    return op.type == MT_OP_DEPTHWISE_CONV2D_S8 ? w.dims[3] : w.dims[0];
}

uint32_t mt_plan_q_record_floats(const mt_image *img, const graph_facts *f, uint32_t index)
{
    mt_tensor_desc t;
    mt_image_tensor(img, index, &t);
    if (t.dtype == MT_DTYPE_F32 || !(t.flags & MT_TENSOR_CONST)) return 0;
    if (bit_get(&f->trained, index)) return mt_q_record_floats(t.dtype, qas_channels(img, index));
    if (t.dtype != MT_DTYPE_I8) return 0;
    return mt_plan_int8_weight_channels(img, f, index); /* a frozen weight's backward: its scales alone */
}

void mt_plan_q_record_write(const mt_image *img, uint32_t index, uint32_t floats, int trained, float *record)
{
    mt_tensor_desc t;
    mt_image_tensor(img, index, &t);
    mt_quant q;
    mt_image_quant(img, &t, &q); /* an int8 weight and an int8 op's bias have one (quant_check.c) */
    const int with_sx = trained; /* a record is an int8 weight's: a bias keeps none */
    const uint32_t channels = with_sx ? floats - 1u : floats;
    for (uint32_t c = 0; c < channels; ++c) record[c] = mt_quant_scale(&q, q.channels == 1 ? 0 : c);
    if (!with_sx) return;
    /* the input's scale sx, after the channels: the op reading this weight (mt_q_grads_of) */
    for (uint32_t o = 0; o < img->num_ops; ++o) {
        mt_op_desc op;
        mt_image_op(img, o, &op);
        if (op.inputs[1] != index || op.num_inputs < 2) continue;
        mt_tensor_desc x;
        mt_image_tensor(img, op.inputs[0], &x);
        mt_quant qx;
        record[channels] = mt_image_quant(img, &x, &qx) ? mt_quant_scale(&qx, 0) : 0.0f;
        return;
    }
}
