/*
 * The planner's promises, on MLPs, the digits CNN and the residual DAG:
 *   - lower_bound_bytes <= total_bytes <= 1.10 · lower_bound_bytes (the arena is close to the
 *     most bytes ever live at once), and total = Σ roles - reuse;
 *   - fused updates (accumulate_gradients = 0) give bitwise the same weights and losses as
 *     accumulate + optimizer_step, in a smaller arena;
 *   - element-wise ops whose input dies run in place (their output shares its input's bytes),
 *     and an input still needed later is never overwritten;
 *   - training only the tail needs a fraction of full training's arena;
 *   - the shared region is really reused: two sessions whose arenas start with different
 *     junk train identically, step after step.
 * The plans are printed as a table (greppable) for the record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_builder.h"
#include "microtrain.h"
#include "model_zoo.h"
#include "mt_test.h"
#include "session.h" /* internal: the tensor table, to see which buffers share bytes */
#include "session_util.h"

typedef struct model {
    const char *name;
    uint8_t *img;
    size_t bytes;
    int in, out;      /* elements of one input sample, classes */
    int sparse;       /* labels (CNNs) or one-hot targets (MLPs) */
} model;

static void configure(mt_train_config *cfg, const model *m, int optimizer, int accumulate, int trainable)
{
    mt_train_config_init(cfg);
    cfg->optimizer = optimizer;
    cfg->momentum = optimizer == MT_OPTIMIZER_SGD ? 0.9f : 0.0f;
    cfg->learning_rate = optimizer == MT_OPTIMIZER_SGD ? 0.05f : 0.01f;
    cfg->loss = m->sparse ? MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY : MT_LOSS_CATEGORICAL_CROSSENTROPY;
    cfg->batch_size = 6;
    cfg->accumulate_gradients = accumulate;
    cfg->num_trainable_ops = trainable;
}

/* Deterministic rows: inputs in [-1, 1), a label or a one-hot row per sample. */
static void feed(mt_session *s, const model *m, int rows, unsigned seed)
{
    int32_t bytes;
    void *t = feed_inputs(s, 0, rows, seed, m->in, &bytes);
    for (int r = 0; r < rows; r++) {
        int label = (int)(mt_test_rand_u32() % (unsigned)m->out);
        if (m->sparse) {
            ((int32_t *)t)[r] = label;
        } else {
            for (int c = 0; c < m->out; c++) ((float *)t)[r * m->out + c] = c == label ? 1.0f : 0.0f;
        }
    }
}

static void check_plan_bounds(const model *m)
{
    static const int optimizers[3] = {MT_OPTIMIZER_SGD, MT_OPTIMIZER_ADAM, MT_OPTIMIZER_ADAMW};
    for (int o = 0; o < 3; o++)
        for (int accumulate = 0; accumulate < 2; accumulate++)
            for (int trainable = -1; trainable <= 2; trainable += 3) { /* all, or the last 2 ops */
                mt_train_config cfg;
                mt_memory_plan p;
                configure(&cfg, m, optimizers[o], accumulate, trainable);
                CHECK_STATUS(mt_plan(m->img, m->bytes, &cfg, &p), MT_OK);
                const size_t roles = p.metadata_bytes + p.weight_bytes + p.gradient_bytes + p.optimizer_bytes +
                                     p.activation_bytes + p.activation_grad_bytes + p.io_bytes + p.scratch_bytes;
                CHECK_EQ_INT(roles - p.reuse_bytes, p.total_bytes);
                CHECK(p.lower_bound_bytes <= p.total_bytes);
                CHECK(p.total_bytes <= p.lower_bound_bytes + p.lower_bound_bytes / 10);
                CHECK_EQ_INT(p.fused_update, !accumulate);
                printf("plan %-14s opt=%d acc=%d trainable=%2d  total %7zu  lower bound %7zu  ratio %.3f  "
                       "reuse %6zu\n",
                       m->name, optimizers[o], accumulate, trainable, p.total_bytes, p.lower_bound_bytes,
                       (double)p.total_bytes / (double)p.lower_bound_bytes, p.reuse_bytes);
            }
}

/* Fused updates change where gradients live, never what the weights become. */
static void check_fused_equals_accumulated(const model *m, int optimizer)
{
    mt_train_config cf, ca;
    sess fused, deferred;
    configure(&cf, m, optimizer, 0, -1);
    configure(&ca, m, optimizer, 1, -1);
    CHECK_STATUS(sess_open(&fused, m->img, m->bytes, &cf), MT_OK);
    CHECK_STATUS(sess_open(&deferred, m->img, m->bytes, &ca), MT_OK);
    mt_memory_plan pf, pa;
    mt_session_plan(fused.s, &pf), mt_session_plan(deferred.s, &pa);
    CHECK(pf.total_bytes < pa.total_bytes); /* no full gradient set live at once */
    for (int step = 0; step < 6; step++) {
        const int rows = step == 5 ? 4 : 6; /* a partial last batch too */
        float lf = 0.0f, la = 0.0f;
        feed(fused.s, m, rows, 100u + (unsigned)step);
        feed(deferred.s, m, rows, 100u + (unsigned)step);
        CHECK_STATUS(mt_session_train_step(fused.s, rows, &lf), MT_OK);
        CHECK_STATUS(mt_session_zero_grad(deferred.s), MT_OK);
        CHECK_STATUS(mt_session_accumulate(deferred.s, rows, &la), MT_OK);
        CHECK_STATUS(mt_session_optimizer_step(deferred.s), MT_OK);
        CHECK_BITS_EQ(lf, la);
    }
    CHECK(same_params(fused.s, deferred.s));
    CHECK(same_counters(fused.s, deferred.s));
    free(fused.block), free(deferred.block);
}

/* Dense -> ReLU -> Dense: the Dense output is read by nothing after the ReLU's forward (Dense's
 * backward needs its input, ReLU's its output), so the ReLU writes over it. */
static void check_in_place(void)
{
    ib_mlp_spec spec;
    size_t bytes;
    ib_mlp_defaults(&spec);
    spec.hidden_act = MT_OP_RELU;
    spec.out_act = MT_OP_SOFTMAX;
    uint8_t *img = ib_build_mlp(&spec, &bytes); /* tensors: x, W1, b1, h, a, W2, b2, z, y */
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
    cfg.batch_size = 4;
    sess g;
    CHECK_STATUS(sess_open(&g, img, bytes, &cfg), MT_OK);
    CHECK(g.s->tensors[3].data == g.s->tensors[4].data); /* a = relu(h) over h */
    /* the softmax input z is read by the fused loss after the softmax: never overwritten */
    CHECK(g.s->tensors[7].data != g.s->tensors[8].data);
    free(g.block);
    free(img);
}

/* Training only the classifier head: the frozen backbone keeps no gradients and no saved
 * activations beyond what the head's backward reads. */
static void check_tail_saves_memory(const model *m)
{
    mt_train_config all, tail;
    mt_memory_plan pa, pt;
    configure(&all, m, MT_OPTIMIZER_ADAM, 0, -1);
    configure(&tail, m, MT_OPTIMIZER_ADAM, 0, 2);
    CHECK_STATUS(mt_plan(m->img, m->bytes, &all, &pa), MT_OK);
    CHECK_STATUS(mt_plan(m->img, m->bytes, &tail, &pt), MT_OK);
    CHECK(pt.total_bytes < pa.total_bytes);
    CHECK(pt.activation_grad_bytes < pa.activation_grad_bytes);
    CHECK(pt.weight_bytes < pa.weight_bytes);
    printf("tail %-14s all ops %zu bytes, last 2 ops %zu bytes (%.0f%%)\n", m->name, pa.total_bytes,
           pt.total_bytes, 100.0 * (double)pt.total_bytes / (double)pa.total_bytes);
}

/* NaN bytes over every buffer of the shared region (activations that are neither inputs nor
 * outputs, all activation gradients, and with fused updates the weight gradients). */
static void scribble_shared(mt_session *s)
{
    const uint32_t B = (uint32_t)s->cfg.batch_size;
    for (uint32_t i = 0; i < s->img.num_tensors; ++i) {
        mt_tensor_rt *t = &s->tensors[i];
        const int activation = !(t->flags & MT_TENSOR_CONST);
        const size_t elements = activation ? (size_t)B * t->count : t->count;
        if (activation && !(t->flags & (MT_TENSOR_INPUT | MT_TENSOR_OUTPUT)))
            memset(t->mutable_data, 0xFF, elements * sizeof(float));
        if (t->grad && (activation || s->plan.fused_update)) memset(t->grad, 0xFF, elements * sizeof(float));
    }
}

/* Shared bytes are written before they are read in every step: junk left in the arena by
 * other buffers (or by the caller before init) never reaches a result. */
static void check_reuse_is_clean(const model *m)
{
    mt_train_config cfg;
    sess a, b;
    configure(&cfg, m, MT_OPTIMIZER_ADAM, 0, -1);
    CHECK_STATUS(sess_open(&a, m->img, m->bytes, &cfg), MT_OK);
    CHECK_STATUS(sess_open(&b, m->img, m->bytes, &cfg), MT_OK);
    for (int step = 0; step < 4; step++) {
        float la, lb;
        feed(a.s, m, 6, 7u + (unsigned)step);
        feed(b.s, m, 6, 7u + (unsigned)step);
        scribble_shared(b.s);
        CHECK_STATUS(mt_session_train_step(a.s, 6, &la), MT_OK);
        CHECK_STATUS(mt_session_train_step(b.s, 6, &lb), MT_OK);
        CHECK_BITS_EQ(la, lb);
        CHECK_STATUS(mt_session_eval_step(a.s, 3, &la), MT_OK);
        CHECK_STATUS(mt_session_eval_step(b.s, 3, &lb), MT_OK);
        CHECK_BITS_EQ(la, lb);
    }
    CHECK(same_params(a.s, b.s));
    free(a.block), free(b.block);
}

/* mt_plan_buffers(): every buffer inside the arena, no two live at once overlap, and the
 * most bytes live at one time is the plan's lower bound. */
typedef struct buffer_list {
    mt_buffer_info b[512];
    int n;
} buffer_list;

static mt_status collect(void *user, const mt_buffer_info *info)
{
    buffer_list *l = (buffer_list *)user;
    if (l->n >= 512) return MT_ERR_UNSUPPORTED;
    l->b[l->n++] = *info;
    return MT_OK;
}

static mt_status stop_at_third(void *user, const mt_buffer_info *info)
{
    (void)info;
    return ++*(int *)user == 3 ? MT_ERR_IO : MT_OK;
}

/* the in-place group of an activation (its root's tensor), -1 for other buffers */
static int32_t group_of(const mt_buffer_info *b)
{
    if (b->kind != MT_BUFFER_ACTIVATION) return -1;
    return b->in_place_of >= 0 ? b->in_place_of : b->tensor_index;
}

static void check_buffer_report(const model *m)
{
    static buffer_list l;
    mt_train_config cfg;
    mt_memory_plan p;
    configure(&cfg, m, MT_OPTIMIZER_ADAM, 0, -1);
    CHECK_STATUS(mt_plan(m->img, m->bytes, &cfg, &p), MT_OK);
    l.n = 0;
    CHECK_STATUS(mt_plan_buffers(m->img, m->bytes, &cfg, collect, &l), MT_OK);
    /* live bytes at each buffer's start: a buffer alone, or the union of the live buffers of
     * one in-place group (in_place_of names its root), which may overlap by design */
    size_t live_max = 0;
    for (int i = 0; i < l.n; i++) {
        const mt_buffer_info *a = &l.b[i];
        CHECK(a->offset + a->bytes <= p.total_bytes && a->start <= a->end);
        size_t live = 0;
        for (int j = 0; j < l.n; j++) {
            const mt_buffer_info *c = &l.b[j];
            const int together = a->start <= c->end && c->start <= a->end;
            const int32_t gc = group_of(c);
            if (j != i && together && group_of(a) != gc)
                CHECK(a->offset + a->bytes <= c->offset || c->offset + c->bytes <= a->offset);
            if (!(c->start <= a->start && a->start <= c->end)) continue;
            /* c's bytes not covered by a live buffer of its group listed before it */
            size_t lo = c->offset, hi = c->offset + c->bytes;
            for (int k = 0; k < j && lo < hi; k++) {
                const mt_buffer_info *e = &l.b[k];
                if (group_of(e) != gc || gc < 0 || !(e->start <= a->start && a->start <= e->end)) continue;
                if (e->offset <= lo && e->offset + e->bytes > lo) lo = e->offset + e->bytes;
                if (e->offset < hi && e->offset + e->bytes >= hi) hi = e->offset;
            }
            if (lo < hi) live += hi - lo;
        }
        if (live > live_max) live_max = live;
    }
    CHECK_EQ_INT(live_max, p.lower_bound_bytes);
    int calls = 0;
    CHECK_STATUS(mt_plan_buffers(m->img, m->bytes, &cfg, stop_at_third, &calls), MT_ERR_IO);
    CHECK_EQ_INT(calls, 3);
    CHECK_STATUS(mt_plan_buffers(m->img, m->bytes, &cfg, NULL, NULL), MT_ERR_BAD_ARGUMENT);
}

int main(void)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 12, spec.hidden = 9, spec.out = 4;
    spec.hidden_act = MT_OP_TANH;
    spec.out_act = MT_OP_SOFTMAX;
    model models[3] = {{"mlp", NULL, 0, 12, 4, 0}, {"digits_cnn", NULL, 0, 64, 10, 1},
                       {"residual_dag", NULL, 0, 72, 5, 1}};
    models[0].img = ib_build_mlp(&spec, &models[0].bytes);
    models[1].img = mz_digits_cnn(&models[1].bytes);
    models[2].img = mz_residual_dag(&models[2].bytes);

    check_in_place();
    for (int k = 0; k < 3; k++) {
        check_plan_bounds(&models[k]);
        check_fused_equals_accumulated(&models[k], MT_OPTIMIZER_SGD);
        check_fused_equals_accumulated(&models[k], MT_OPTIMIZER_ADAMW);
        check_tail_saves_memory(&models[k]);
        check_reuse_is_clean(&models[k]);
        check_buffer_report(&models[k]);
    }
    for (int k = 0; k < 3; k++) free(models[k].img);
    return MT_TEST_END();
}
