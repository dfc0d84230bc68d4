/*
 * test_proximal: FedProx's proximal term (mt_train_config.proximal_mu, mt_session_set_reference).
 *
 * A session with proximal_mu = μ > 0 trains on J(w) = L(w) + μ/2·‖w − w_ref‖² over its trained
 * weights. Checked here:
 *   - the plan: reference_bytes equals weight_bytes (one copy per trained weight), the total
 *     grows by exactly that, and mt_plan_buffers() reports each reference right after its
 *     weight (MT_BUFFER_REFERENCE); μ = 0 plans no reference and set_reference is MT_ERR_STATE;
 *   - the gradient, against central finite differences of J: with SGD (lr 1, no momentum or
 *     decay) and accumulated gradients, one optimizer step moves w by exactly its effective
 *     gradient ∇L + μ·(w − w_ref); J is evaluated in double from eval_step's MEAN loss plus
 *     the proximal sum (same tolerance argument as tests/ops/test_dense.c);
 *   - at the reference the term adds an exact zero: right after mt_session_set_reference() a
 *     step equals, bit for bit, the step of a twin session without the term, for SGD with
 *     momentum and decay, Adam and AdamW, in the fused and the accumulate layout;
 *   - the fused and the accumulate layout give the same bits with the term too;
 *   - the update guard covers the term: μ·(w − w_ref) overflowing is MT_ERR_NUMERIC and, with
 *     guard_gradients, changes nothing;
 *   - checkpoints carry the reference (version 3) with the optimizer state: a session resumed
 *     from one mid-round, whatever its own reference was, takes the next steps bit for bit
 *     like the session that never stopped (SGD with momentum, Adam); a session without the
 *     term loads the same checkpoint (the reference skipped); a weights-only checkpoint stays
 *     version 2; a reference holding a NaN, or a version 3 header without the reference
 *     flag, is MT_ERR_BAD_CHECKPOINT even under a valid CRC.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "mt_test.h"
#include "session_util.h"

#define IN 5
#define HIDDEN 4
#define OUT 3
#define ROWS 6
#define MU 0.37f
#define H 1e-2f
#define RTOL 2e-3

static uint8_t *build(size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = IN, spec.hidden = HIDDEN, spec.out = OUT;
    spec.hidden_act = MT_OP_TANH, spec.out_act = 0;
    spec.seed = 1234u;
    return ib_build_mlp(&spec, bytes);
}

static mt_train_config config(int optimizer, float mu, int accumulate)
{
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = optimizer;
    cfg.batch_size = ROWS;
    cfg.learning_rate = optimizer == MT_OPTIMIZER_SGD ? 0.05f : 0.01f;
    cfg.accumulate_gradients = accumulate;
    cfg.proximal_mu = mu;
    return cfg;
}

/* Move every trained weight away from where it is (so that w differs from w_ref). */
static void nudge_weights(mt_session *s, unsigned seed)
{
    int32_t count = 0;
    mt_session_param_count(s, &count);
    mt_test_seed(seed);
    for (int p = 0; p < count; ++p) {
        mt_param_info info;
        mt_session_param(s, p, &info);
        for (int i = 0; info.trained && i < info.count; ++i) info.data[i] += mt_test_uniform(-0.3f, 0.3f);
    }
}

/* ---- the plan ------------------------------------------------------------------------ */

typedef struct seen {
    size_t weight_end[64]; /* by tensor: offset + bytes of its weight piece */
    int references, adjacent;
} seen;

static mt_status note_buffer(void *user, const mt_buffer_info *b)
{
    seen *s = (seen *)user;
    if (b->tensor_index < 0 || b->tensor_index >= 64) return MT_OK;
    if (b->kind == MT_BUFFER_WEIGHT) s->weight_end[b->tensor_index] = b->offset + b->bytes;
    if (b->kind == MT_BUFFER_REFERENCE) {
        s->references++;
        s->adjacent += s->weight_end[b->tensor_index] == b->offset;
    }
    return MT_OK;
}

static void test_plan(const uint8_t *img, size_t bytes)
{
    mt_train_config with = config(MT_OPTIMIZER_ADAM, MU, 0), without = config(MT_OPTIMIZER_ADAM, 0.0f, 0);
    mt_memory_plan a, b;
    CHECK_STATUS(mt_plan(img, bytes, &with, &a), MT_OK);
    CHECK_STATUS(mt_plan(img, bytes, &without, &b), MT_OK);
    CHECK_EQ_INT(b.reference_bytes, 0);
    CHECK_EQ_INT(a.reference_bytes, a.weight_bytes);
    CHECK_EQ_INT(a.total_bytes, b.total_bytes + a.weight_bytes);
    CHECK_EQ_INT(a.total_bytes, a.metadata_bytes + a.weight_bytes + a.reference_bytes + a.gradient_bytes +
                                    a.optimizer_bytes + a.activation_bytes + a.activation_grad_bytes +
                                    a.io_bytes + a.scratch_bytes - a.reuse_bytes);
    seen s;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(mt_plan_buffers(img, bytes, &with, note_buffer, &s), MT_OK);
    CHECK_EQ_INT(s.references, a.num_trained_params);
    CHECK_EQ_INT(s.adjacent, a.num_trained_params);

    sess g;
    CHECK_STATUS(sess_open(&g, img, bytes, &without), MT_OK);
    CHECK_STATUS(mt_session_set_reference(g.s), MT_ERR_STATE);
    free(g.block);
    CHECK_STATUS(mt_session_set_reference(NULL), MT_ERR_BAD_ARGUMENT);
}

/* ---- the gradient against finite differences ------------------------------------------ */

typedef struct objective {
    mt_session *s;
    float *ref[8]; /* per trained param position: a copy of w_ref */
} objective;

/* J(w) = mean loss over ROWS rows + μ/2 Σ (w − w_ref)², in double. */
static double J(objective *o)
{
    float loss = 0.0f;
    mt_session_eval_step(o->s, ROWS, &loss);
    double prox = 0.0;
    int32_t count = 0;
    mt_session_param_count(o->s, &count);
    for (int p = 0; p < count; ++p) {
        mt_param_info info;
        mt_session_param(o->s, p, &info);
        for (int i = 0; info.trained && i < info.count; ++i) {
            const double d = (double)info.data[i] - (double)o->ref[p][i];
            prox += d * d;
        }
    }
    return (double)loss + 0.5 * (double)MU * prox;
}

static void test_gradient(const uint8_t *img, size_t bytes)
{
    mt_train_config cfg = config(MT_OPTIMIZER_SGD, MU, 1);
    cfg.learning_rate = 1.0f;
    cfg.loss = MT_LOSS_MSE;
    sess g;
    CHECK_STATUS(sess_open(&g, img, bytes, &cfg), MT_OK);
    objective o;
    memset(&o, 0, sizeof o);
    o.s = g.s;
    int32_t count = 0;
    mt_session_param_count(g.s, &count);
    float *before[8] = {0};
    for (int p = 0; p < count && p < 8; ++p) { /* w_ref: the image's weights, as init copied them */
        mt_param_info info;
        mt_session_param(g.s, p, &info);
        o.ref[p] = (float *)malloc(4u * (size_t)info.count);
        before[p] = (float *)malloc(4u * (size_t)info.count);
        memcpy(o.ref[p], info.image_data, 4u * (size_t)info.count);
    }
    nudge_weights(g.s, 77u); /* w ≠ w_ref, so the term is not zero */
    feed_rows(g.s, 0, ROWS, 99u, IN, OUT);

    /* the finite differences of J over every trained element */
    double *fd[8] = {0};
    for (int p = 0; p < count; ++p) {
        mt_param_info info;
        mt_session_param(g.s, p, &info);
        fd[p] = (double *)calloc((size_t)info.count, sizeof(double));
        memcpy(before[p], info.data, 4u * (size_t)info.count);
        for (int i = 0; i < info.count; ++i) {
            const float saved = info.data[i], up = saved + H, down = saved - H;
            info.data[i] = up;
            const double jp = J(&o);
            info.data[i] = down;
            const double jm = J(&o);
            info.data[i] = saved;
            fd[p][i] = (jp - jm) / ((double)up - (double)down);
        }
    }
    /* one optimizer step of lr 1: w' = w − (∇L + μ·(w − w_ref)) */
    CHECK_STATUS(mt_session_zero_grad(g.s), MT_OK);
    CHECK_STATUS(mt_session_accumulate(g.s, ROWS, NULL), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(g.s), MT_OK);
    int checked = 0;
    for (int p = 0; p < count; ++p) {
        mt_param_info info;
        mt_session_param(g.s, p, &info);
        for (int i = 0; i < info.count; ++i, ++checked) {
            const double analytic = (double)before[p][i] - (double)info.data[i];
            if (!CHECK_CLOSE(analytic, fd[p][i], RTOL)) printf("    in dW(param %d)[%d]\n", p, i);
        }
        free(fd[p]), free(o.ref[p]), free(before[p]);
    }
    CHECK_EQ_INT(checked, HIDDEN * IN + HIDDEN + OUT * HIDDEN + OUT);
    free(g.block);
}

/* ---- at the reference the term is an exact zero; fused = accumulate -------------------- */

static void step(mt_session *s, int accumulate, unsigned seed)
{
    feed_rows(s, 0, ROWS, seed, IN, OUT);
    if (!accumulate) {
        CHECK_STATUS(mt_session_train_step(s, ROWS, NULL), MT_OK);
        return;
    }
    CHECK_STATUS(mt_session_zero_grad(s), MT_OK);
    CHECK_STATUS(mt_session_accumulate(s, ROWS - 2, NULL), MT_OK); /* two calls, one update */
    feed_rows(s, 0, 2, seed + 1000u, IN, OUT);
    CHECK_STATUS(mt_session_accumulate(s, 2, NULL), MT_OK);
    CHECK_STATUS(mt_session_optimizer_step(s), MT_OK);
}

/* Copy the trained weights of a into b (same model and trained set). */
static void copy_weights(mt_session *a, mt_session *b)
{
    int32_t count = 0;
    mt_session_param_count(a, &count);
    for (int p = 0; p < count; ++p) {
        mt_param_info ia, ib;
        mt_session_param(a, p, &ia);
        mt_session_param(b, p, &ib);
        if (ia.trained && ib.trained) memcpy(ib.data, ia.data, 4u * (size_t)ia.count);
    }
}

static void test_zero_at_reference(const uint8_t *img, size_t bytes, int optimizer, float momentum, float decay,
                                   int accumulate)
{
    mt_train_config prox = config(optimizer, MU, accumulate), plain = config(optimizer, 0.0f, accumulate);
    prox.momentum = plain.momentum = momentum;
    prox.weight_decay = plain.weight_decay = decay;
    sess a, b;
    CHECK_STATUS(sess_open(&a, img, bytes, &prox), MT_OK);
    CHECK_STATUS(sess_open(&b, img, bytes, &plain), MT_OK);
    nudge_weights(a.s, 5u); /* the global model of a round: loaded, then made the reference */
    copy_weights(a.s, b.s);
    CHECK_STATUS(mt_session_set_reference(a.s), MT_OK);
    step(a.s, accumulate, 11u);
    step(b.s, accumulate, 11u);
    if (!CHECK(same_params(a.s, b.s)))
        printf("    optimizer %d momentum %g decay %g accumulate %d\n", optimizer, (double)momentum,
               (double)decay, accumulate);
    /* away from the reference the term pulls back: the next steps differ */
    step(a.s, accumulate, 12u);
    step(b.s, accumulate, 12u);
    CHECK(!same_params(a.s, b.s));
    free(a.block), free(b.block);
}

static void test_fused_equals_accumulate(const uint8_t *img, size_t bytes, int optimizer)
{
    mt_train_config fused = config(optimizer, MU, 0), kept = config(optimizer, MU, 1);
    sess a, b;
    CHECK_STATUS(sess_open(&a, img, bytes, &fused), MT_OK);
    CHECK_STATUS(sess_open(&b, img, bytes, &kept), MT_OK);
    nudge_weights(a.s, 21u);
    nudge_weights(b.s, 21u);
    for (unsigned k = 0; k < 4; ++k) {
        feed_rows(a.s, 0, ROWS, 40u + k, IN, OUT);
        feed_rows(b.s, 0, ROWS, 40u + k, IN, OUT);
        CHECK_STATUS(mt_session_train_step(a.s, ROWS, NULL), MT_OK);
        CHECK_STATUS(mt_session_train_step(b.s, ROWS, NULL), MT_OK);
    }
    CHECK(same_params(a.s, b.s));
    CHECK(same_counters(a.s, b.s));
    free(a.block), free(b.block);
}

/* ---- the update guard sees the term ---------------------------------------------------- */

static void test_guard(const uint8_t *img, size_t bytes)
{
    mt_train_config cfg = config(MT_OPTIMIZER_SGD, 3e38f, 0);
    cfg.guard_gradients = 1;
    sess g;
    CHECK_STATUS(sess_open(&g, img, bytes, &cfg), MT_OK);
    feed_rows(g.s, 0, ROWS, 3u, IN, OUT);
    CHECK_STATUS(mt_session_train_step(g.s, ROWS, NULL), MT_OK); /* at the reference: no term */
    nudge_weights(g.s, 8u);                                      /* |w − w_ref| up to 0.3 */
    mt_param_info info;
    mt_session_param(g.s, 0, &info);
    info.data[0] = 1e3f; /* μ·(w − w_ref) = 3e41: infinite in float32 */
    static uint8_t before[8192];
    size_t size = 0;
    CHECK_STATUS(mt_checkpoint_save_buffer(g.s, 1, NULL, 0, before, sizeof before, &size), MT_OK);
    int64_t errors = 0;
    CHECK_STATUS(mt_session_train_step(g.s, ROWS, NULL), MT_ERR_NUMERIC);
    mt_session_numeric_errors(g.s, &errors);
    CHECK_EQ_INT(errors, 1);
    static uint8_t after[8192];
    size_t size2 = 0;
    CHECK_STATUS(mt_checkpoint_save_buffer(g.s, 1, NULL, 0, after, sizeof after, &size2), MT_OK);
    CHECK(size == size2 && memcmp(before, after, size) == 0); /* nothing changed */
    mt_error_detail detail;
    mt_session_last_error(g.s, &detail);
    CHECK_EQ_INT(detail.tensor_index, (int)info.tensor_index);
    free(g.block);
}

/* ---- checkpoints keep the reference ------------------------------------------------------- */

static uint32_t crc32_of(const uint8_t *p, size_t n) /* zlib's CRC-32 */
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = c & 1u ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; ++k) p[k] = (uint8_t)(v >> (8 * k));
}

static void test_checkpoint_resume(const uint8_t *img, size_t bytes, int optimizer, float momentum)
{
    mt_train_config prox = config(optimizer, MU, 0), plain = config(optimizer, 0.0f, 0);
    prox.momentum = plain.momentum = momentum;
    sess a, b, c;
    CHECK_STATUS(sess_open(&a, img, bytes, &prox), MT_OK);
    CHECK_STATUS(sess_open(&b, img, bytes, &prox), MT_OK);
    CHECK_STATUS(sess_open(&c, img, bytes, &plain), MT_OK);
    nudge_weights(a.s, 31u); /* the round's global model, then two local steps */
    CHECK_STATUS(mt_session_set_reference(a.s), MT_OK);
    step(a.s, 0, 32u);
    step(a.s, 0, 33u);
    static uint8_t ck[16384], weights_only[16384];
    size_t size = 0, size_w = 0;
    CHECK_STATUS(mt_checkpoint_save_buffer(a.s, 1, NULL, 0, ck, sizeof ck, &size), MT_OK);
    CHECK_EQ_INT(ck[4] | ck[5] << 8, 3);
    CHECK_STATUS(mt_checkpoint_save_buffer(a.s, 0, NULL, 0, weights_only, sizeof weights_only, &size_w), MT_OK);
    CHECK_EQ_INT(weights_only[4] | weights_only[5] << 8, 2);

    nudge_weights(b.s, 77u); /* another reference: the checkpoint's must replace it */
    CHECK_STATUS(mt_session_set_reference(b.s), MT_OK);
    CHECK_STATUS(mt_checkpoint_load_buffer(b.s, ck, size, NULL, NULL), MT_OK);
    for (unsigned k = 0; k < 3; ++k) step(a.s, 0, 40u + k), step(b.s, 0, 40u + k);
    if (!CHECK(same_params(a.s, b.s) && same_counters(a.s, b.s)))
        printf("    resumed FedProx session differs: optimizer %d momentum %g\n", optimizer, (double)momentum);

    CHECK_STATUS(mt_checkpoint_load_buffer(c.s, ck, size, NULL, NULL), MT_OK); /* no term: skipped */

    /* contents no writer produces, under a valid CRC: refused, nothing loaded */
    static uint8_t bad[16384];
    memcpy(bad, ck, size);
    const size_t last = size - 4 - 4; /* the last record's last float: a reference value */
    put_u32(bad + last, 0x7FC00000u);
    put_u32(bad + size - 4, crc32_of(bad, size - 4));
    CHECK_STATUS(mt_checkpoint_load_buffer(b.s, bad, size, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    memcpy(bad, ck, size);
    put_u32(bad + 72, 0u);
    put_u32(bad + size - 4, crc32_of(bad, size - 4));
    CHECK_STATUS(mt_checkpoint_load_buffer(b.s, bad, size, NULL, NULL), MT_ERR_BAD_CHECKPOINT);
    CHECK(same_params(a.s, b.s));
    free(a.block), free(b.block), free(c.block);
}

int main(void)
{
    size_t bytes = 0;
    uint8_t *img = build(&bytes);
    test_plan(img, bytes);
    test_gradient(img, bytes);
    test_zero_at_reference(img, bytes, MT_OPTIMIZER_SGD, 0.0f, 0.0f, 0);
    test_zero_at_reference(img, bytes, MT_OPTIMIZER_SGD, 0.9f, 0.01f, 0);
    test_zero_at_reference(img, bytes, MT_OPTIMIZER_SGD, 0.9f, 0.01f, 1);
    test_zero_at_reference(img, bytes, MT_OPTIMIZER_ADAM, 0.0f, 0.01f, 0);
    test_zero_at_reference(img, bytes, MT_OPTIMIZER_ADAMW, 0.0f, 0.01f, 1);
    test_fused_equals_accumulate(img, bytes, MT_OPTIMIZER_SGD);
    test_fused_equals_accumulate(img, bytes, MT_OPTIMIZER_ADAM);
    test_guard(img, bytes);
    test_checkpoint_resume(img, bytes, MT_OPTIMIZER_SGD, 0.9f);
    test_checkpoint_resume(img, bytes, MT_OPTIMIZER_ADAM, 0.0f);
    free(img);
    return MT_TEST_END();
}
