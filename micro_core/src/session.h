/*
 * The session as laid out in the arena, and the planner that lays it out.
 *
 * Arena map (every piece rounded up to MT_ARENA_ALIGN; one planner computes it
 * for mt_plan() with no arena and for mt_session_init() with one):
 *
 *   +---------------------------+  arena
 *   | mt_session                |  metadata
 *   | tensor table [T]          |  metadata
 *   | op table [O]              |  metadata
 *   | param / trained lists     |  metadata
 *   +---------------------------+
 *   | per tensor, in table order:
 *   |   trained weight W        |  weights    (frozen weights stay in the image)
 *   |   reference W_ref         |  references (proximal_mu > 0 only; right after W)
 *   |   dW                      |  gradients
 *   |   momentum | Adam m, v    |  optimizer state
 *   |   activation [B, D]       |  activations (inputs and op outputs)
 *   |   dActivation [B, D]      |  backward temporaries, only downstream of a trained weight
 *   +---------------------------+
 *   | target [B, D] | [B] int32 |  io
 *   | scratch                   |  scratch (largest kernel need)
 *   +---------------------------+  arena + total_bytes
 */
#ifndef MT_SESSION_H
#define MT_SESSION_H

#include "model_image.h"
#include "ops/kernel.h"

#define MT_SESSION_MAGIC 0x4D545353u /* "SSTM" */

/*
 * Metadata records are planned at fixed sizes, not sizeof(), so that the plan
 * (and the arena a firmware declares) is the same number on a 64-bit host and a
 * 32-bit device: host tools compute a device's arena exactly. planner.c checks
 * at compile time that the structs fit.
 */
#define MT_SESSION_RECORD_BYTES 512u
#define MT_TENSOR_RECORD_BYTES 64u
#define MT_OP_RECORD_BYTES 32u

enum { MT_FUSION_NONE = 0, MT_FUSION_SOFTMAX_CCE = 1, MT_FUSION_SIGMOID_BCE = 2 };

struct mt_session {
    uint32_t magic; /* MT_SESSION_MAGIC while the session is valid */
    mt_image img;
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_tensor_rt *tensors;
    mt_op_desc *ops;
    uint16_t *params;  /* CONST f32 tensors, table order */
    uint16_t *trained; /* the subset the optimizer updates */
    uint32_t *weight_parts; /* per tensor, what of a trained weight trains (mt_weight_part_of),
                               or NULL when every trained weight trains whole */
    int32_t num_params;
    int32_t num_trained;
    void *target;
    uint32_t target_bytes;
    float *scratch;
    uint32_t output_tensor; /* the tensor the loss reads (output 0) */
    int32_t fused_op;       /* op whose backward the loss replaces, -1 if none */
    int32_t fusion;         /* MT_FUSION_* */
    float learning_rate;
    float base_learning_rate; /* what schedules scale: cfg.learning_rate, or a v2 checkpoint's */
    int64_t step;
    int64_t epoch;
    int64_t accumulated_rows; /* rows whose gradients were summed since zero_grad */
    int64_t numeric_errors;   /* steps refused for a NaN/Inf loss, gradient or update */
    uint32_t model_fingerprint; /* mt_image_fingerprint() of the image */
    double beta1_power; /* β1^step, β2^step (Adam bias corrections) */
    double beta2_power;
    mt_error_detail last_error; /* the last failing step call (mt_session_last_error) */
};

/*
 * Sparse update (mt_train_config.trainable_op_channels): the trained part of a weight is
 * `blocks` runs of `len` elements, run j starting at element j·stride. The first k output
 * rows of a Dense's [U, I] or a Conv2D's [OC, KH, KW, C] weight are one run of k·(count/U);
 * the first k channels of a DepthwiseConv2D's [1, KH, KW, C] are KH·KW runs of k, stride C. A
 * whole weight is one run of count. The optimizer state holds the runs back to back
 * (blocks·len elements an array); the gradient and the weight keep the weight's layout. A
 * part is coded in one uint32 (planner: mt_plan_part_code): 0 whole, else k, with
 * MT_PART_LAST_AXIS set when the channels are the last dimension.
 */
#define MT_PART_LAST_AXIS 0x80000000u

typedef struct mt_weight_part {
    uint32_t blocks, len, stride;
} mt_weight_part;

static inline mt_weight_part mt_weight_part_from(uint32_t code, uint32_t count, uint32_t rows, uint32_t last_dim)
{
    mt_weight_part p = {1u, count, count};
    const uint32_t k = code & ~MT_PART_LAST_AXIS;
    if (code == 0) return p;
    if (code & MT_PART_LAST_AXIS) {
        p.blocks = count / last_dim;
        p.len = k;
        p.stride = last_dim;
    } else {
        p.len = k * (count / rows);
    }
    return p;
}

/* Elements of a part: the optimizer state's length per array. */
static inline uint32_t mt_part_elements(mt_weight_part p)
{
    return p.blocks * p.len;
}

/* A session mt_session_init() built and nothing has invalidated since. */
static inline int mt_session_valid(const mt_session *s)
{
    return s != NULL && s->magic == MT_SESSION_MAGIC;
}

/* [a, a + n) and [b, b + m) share a byte; ends saturate, so a size running past the address
 * space overlaps whatever lies after its start. */
static inline int mt_bytes_overlap(const void *a, size_t n, const void *b, size_t m)
{
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    const uintptr_t ea = n > UINTPTR_MAX - pa ? UINTPTR_MAX : pa + n;
    const uintptr_t eb = m > UINTPTR_MAX - pb ? UINTPTR_MAX : pb + m;
    return n > 0 && m > 0 && pa < eb && pb < ea;
}

/* [p, p + n) shares a byte with the session's arena (the session is at its start). */
static inline int mt_in_arena(const mt_session *s, const void *p, size_t n)
{
    return mt_bytes_overlap(p, n, s, s->plan.total_bytes);
}

/*
 * The planner (planner.c). Both run the analysis of img and cfg (which trains, lifetimes,
 * placement) once. mt_plan_layout() then only sizes: the plan's figures (its binding, the
 * fields from `image` on, is session_init.c's). mt_plan_build() sizes, and given an arena of
 * at least the plan's total_bytes (else MT_ERR_ARENA_TOO_SMALL, nothing written) zeroes that
 * much of it, builds the session there and returns it in *session, with s->plan's figures.
 * given: NULL, or the plan mt_plan_layout() made for this image and configuration, whose
 * placement order the build takes instead of trying every order (and whose lower bound and
 * int8 share it copies); an order that is none of the planner's is MT_ERR_BAD_ARGUMENT.
 */
mt_status mt_plan_layout(const mt_image *img, const mt_train_config *cfg, mt_memory_plan *plan);
mt_status mt_plan_build(const mt_image *img, const mt_train_config *cfg, const mt_memory_plan *given,
                        uint8_t *arena, size_t arena_bytes, mt_memory_plan *plan, mt_session **session);

/* The same plan, reporting every buffer (mt_plan_buffers()); no arena. */
mt_status mt_plan_report(const mt_image *img, const mt_train_config *cfg, mt_buffer_fn report, void *user);

/* The same plan, telling where (not NULL) what a failure concerns (mt_model_diagnose()). */
mt_status mt_plan_diagnose(const mt_image *img, const mt_train_config *cfg, mt_error_detail *where);

/* The elements of trained weight t the arena holds (mutable_data): its first rows_held rows
 * (ops/kernel.h), or all of them. */
static inline uint32_t mt_held_elements(const mt_tensor_rt *t)
{
    return t->rows_held ? t->rows_held * (t->count / t->dims[0]) : t->count;
}

/* The proximal term's reference copy of trained weight t: the arena piece the planner lays
 * right after the weight (rounded to MT_ARENA_ALIGN), present when proximal_mu > 0. */
static inline float *mt_reference_of(const mt_session *s, const mt_tensor_rt *t)
{
    if (s->cfg.proximal_mu <= 0.0f || !t->trained) return NULL;
    const size_t bytes = ((size_t)mt_held_elements(t) * 4u + (MT_ARENA_ALIGN - 1u)) & ~(size_t)(MT_ARENA_ALIGN - 1u);
    return (float *)(void *)((uint8_t *)t->mutable_data + bytes);
}

/* The first op reading weight tensor `tensor` (what an error about it names; a quantized one's
 * only reader, plan_qas.c), or -1, and the input it reads it as (*input). */
static inline int32_t mt_reader_of(const mt_session *s, uint16_t tensor, int *input)
{
    for (uint32_t o = 0; o < s->img.num_ops; ++o)
        for (int k = 0; k < s->ops[o].num_inputs; ++k)
            if (s->ops[o].inputs[k] == tensor) return *input = k, (int32_t)o;
    return -1;
}

/* The trained part of weight t (a tensor of s). */
static inline mt_weight_part mt_weight_part_of(const mt_session *s, const mt_tensor_rt *t)
{
    const uint32_t code = s->weight_parts ? s->weight_parts[t - s->tensors] : 0u;
    return mt_weight_part_from(code, t->count, t->dims[0], mt_last_dim(t));
}

/* Record a failing step call for mt_session_last_error(): status st, op index op (-1: none;
 * its type is read from the op table) and tensor index tensor (-1: none). Ignores a NULL or
 * invalid session. */
void mt_session_note_error(mt_session *s, mt_status st, int32_t op, int32_t tensor);

#endif /* MT_SESSION_H */
