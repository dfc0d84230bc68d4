/*
 * The plan as a value (session_init.c): mt_plan() validates and plans once, and
 * mt_session_init_from_plan() lays the session out from its plan without validating or
 * sizing again, yet refuses a plan that is not its image's, configuration's or library's.
 *
 * The work is counted without touching the core: this program links with
 * -Wl,--wrap=<symbol> (tests/core/CMakeLists.txt), so the core's calls across its own files
 * reach the counters below first:
 *   crc_passes   mt_crc32_update over the whole image (bytes 16.. of it: the validation's one
 *                pass over every byte)
 *   validations  mt_image_open (the header, the CRC, the tables and every op's checks)
 *   plans        mt_plan_layout (the planner sizing an arena: mt_plan())
 *   builds       mt_plan_build (the planner laying a session out in an arena: init)
 *   analyses     mt_plan_lifetimes (the planner's buffer lifetimes, in each of the two above)
 *   searches     mt_share_place (the placement tried in each of the planner's orders; init
 *                from a plan places in the order the plan kept, mt_share_place_in)
 */
#include <stddef.h>

#include "guarded_session_util.h"
#include "model_image.h"
#include "plan_graph.h"
#include "session.h"

static struct {
    const uint8_t *image; /* the image whose whole-image CRC passes count */
    size_t image_bytes;
    int crc_passes, validations, plans, builds, analyses, searches;
} seen;

/* Each wrapped function's type, and the check that it is the header's (an initializer of
 * another function type fails to compile with -Werror): a wrapper whose parameters had
 * drifted from the real function's would pass them on shifted. */
typedef uint32_t crc_fn(uint32_t crc, const void *data, size_t bytes);
typedef mt_status open_fn(mt_image *img, const void *image, size_t image_bytes);
typedef mt_status layout_fn(const mt_image *img, const mt_train_config *cfg, mt_memory_plan *plan);
typedef mt_status build_fn(const mt_image *img, const mt_train_config *cfg, const mt_memory_plan *given,
                           uint8_t *arena, size_t arena_bytes, mt_memory_plan *plan, mt_session **session);
typedef mt_status lifetimes_fn(const mt_image *img, const graph_facts *f, uint32_t B, lifetimes *lt);
typedef uint64_t place_fn(mt_sharing *sh, int32_t *order);
crc_fn *const header_crc = mt_crc32_update;
open_fn *const header_open = mt_image_open;
layout_fn *const header_layout = mt_plan_layout;
build_fn *const header_build = mt_plan_build;
lifetimes_fn *const header_lifetimes = mt_plan_lifetimes;
place_fn *const header_place = mt_share_place;

crc_fn __real_mt_crc32_update, __wrap_mt_crc32_update;
uint32_t __wrap_mt_crc32_update(uint32_t crc, const void *data, size_t bytes)
{
    if (seen.image && data == seen.image + 16 && bytes == seen.image_bytes - 16u) ++seen.crc_passes;
    return __real_mt_crc32_update(crc, data, bytes);
}

open_fn __real_mt_image_open, __wrap_mt_image_open;
mt_status __wrap_mt_image_open(mt_image *img, const void *image, size_t image_bytes)
{
    ++seen.validations;
    return __real_mt_image_open(img, image, image_bytes);
}

layout_fn __real_mt_plan_layout, __wrap_mt_plan_layout;
mt_status __wrap_mt_plan_layout(const mt_image *img, const mt_train_config *cfg, mt_memory_plan *plan)
{
    ++seen.plans;
    return __real_mt_plan_layout(img, cfg, plan);
}

build_fn __real_mt_plan_build, __wrap_mt_plan_build;
mt_status __wrap_mt_plan_build(const mt_image *img, const mt_train_config *cfg, const mt_memory_plan *given,
                               uint8_t *arena, size_t arena_bytes, mt_memory_plan *plan, mt_session **session)
{
    ++seen.builds;
    return __real_mt_plan_build(img, cfg, given, arena, arena_bytes, plan, session);
}

lifetimes_fn __real_mt_plan_lifetimes, __wrap_mt_plan_lifetimes;
mt_status __wrap_mt_plan_lifetimes(const mt_image *img, const graph_facts *f, uint32_t B, lifetimes *lt)
{
    ++seen.analyses;
    return __real_mt_plan_lifetimes(img, f, B, lt);
}

place_fn __real_mt_share_place, __wrap_mt_share_place;
uint64_t __wrap_mt_share_place(mt_sharing *sh, int32_t *order)
{
    ++seen.searches;
    return __real_mt_share_place(sh, order);
}

static void count_work_on(const uint8_t *image, size_t image_bytes)
{
    memset(&seen, 0, sizeof seen);
    seen.image = image;
    seen.image_bytes = image_bytes;
}

/* The counters equal crc_passes, validations, plans, builds, analyses, searches. */
#define CHECK_WORK(c, v, p, b, a, s)                                                               \
    (CHECK_EQ_INT(seen.crc_passes, c), CHECK_EQ_INT(seen.validations, v), CHECK_EQ_INT(seen.plans, p), \
     CHECK_EQ_INT(seen.builds, b), CHECK_EQ_INT(seen.analyses, a), CHECK_EQ_INT(seen.searches, s))

/* The seal session_init.c computes, for the forgeries below. */
static void reseal(mt_memory_plan *plan)
{
    plan->seal = mt_crc32_update(0x6D74706Cu, plan, offsetof(mt_memory_plan, seal));
}

static uint8_t *mlp_image(size_t *bytes)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.out_act = MT_OP_SOFTMAX;
    return ib_build_mlp(&spec, bytes);
}

/* An arena of `bytes` between guard zones (guarded_session_util.h's layout, no session). */
static guarded arena_of(size_t bytes)
{
    guarded g;
    memset(&g, 0, sizeof g);
    g.bytes = bytes;
    g.block = malloc(bytes + 2 * GUARD + MT_ARENA_ALIGN);
    g.arena = g.block + GUARD + (MT_ARENA_ALIGN - (uintptr_t)(g.block + GUARD) % MT_ARENA_ALIGN) % MT_ARENA_ALIGN;
    memset(g.block, GUARD_BYTE, bytes + 2 * GUARD + MT_ARENA_ALIGN);
    return g;
}

/* No byte of g's arena written. */
static int arena_untouched(const guarded *g)
{
    for (size_t i = 0; i < g->bytes; i++)
        if (g->arena[i] != GUARD_BYTE) return 0;
    return guards_intact(g);
}

/* One compile: the image's every byte is read once (one validation), it is sized once (the
 * placement searched in every order) and laid out once from the plan; the layout re-derives
 * the lifetimes from the trusted image (two analyses) and places in the plan's order. */
static void test_one_compile_validates_once_and_plans_once(void)
{
    size_t bytes;
    uint8_t *img = mlp_image(&bytes);
    mt_train_config cfg;
    config(&cfg, MT_OPTIMIZER_ADAM, MT_LOSS_CATEGORICAL_CROSSENTROPY, 4);

    count_work_on(img, bytes);
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
    CHECK_WORK(1, 1, 1, 0, 1, 1);
    guarded g = arena_of(plan.total_bytes);
    mt_session *s = NULL;
    count_work_on(img, bytes);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena, g.bytes), MT_OK);
    CHECK_WORK(0, 0, 0, 1, 1, 0);
    CHECK(guards_intact(&g));
    mt_memory_plan again;
    CHECK_STATUS(mt_session_plan(s, &again), MT_OK);
    CHECK(memcmp(&again, &plan, sizeof plan) == 0);

    /* the convenience path: one validation and one layout in one call */
    guarded h = arena_of(plan.total_bytes);
    mt_session *t = NULL;
    count_work_on(img, bytes);
    CHECK_STATUS(mt_session_init(&t, img, bytes, &cfg, h.arena, h.bytes), MT_OK);
    CHECK_WORK(1, 1, 0, 1, 1, 1);
    CHECK_STATUS(mt_session_plan(t, &again), MT_OK);
    CHECK(memcmp(&again, &plan, sizeof plan) == 0); /* the same plan, binding and all */

    /* both sessions train alike, bit for bit */
    for (int step = 0; step < 3; step++) {
        float la = 0.0f, lb = 1.0f;
        fill_inputs(s, 4, 3, 11u + (unsigned)step), fill_targets(s, 4, 2, 0, 21u + (unsigned)step);
        fill_inputs(t, 4, 3, 11u + (unsigned)step), fill_targets(t, 4, 2, 0, 21u + (unsigned)step);
        CHECK_STATUS(mt_session_train_step(s, 4, &la), MT_OK);
        CHECK_STATUS(mt_session_train_step(t, 4, &lb), MT_OK);
        CHECK_BITS_EQ(la, lb);
    }
    CHECK(same_params(s, t));
    CHECK(guards_intact(&g) && guards_intact(&h));
    count_work_on(NULL, 0);
    free(g.block), free(h.block), free(img);
}

/* A plan that is not this image's, configuration's or library's, or not as mt_plan() wrote
 * it, is a status; nothing of the arena is written. */
static void test_init_refuses_a_plan_that_does_not_belong(void)
{
    size_t bytes;
    uint8_t *img = mlp_image(&bytes);
    static uint8_t mask[4] = {0, 0, 1, 1}; /* dense, relu, dense, softmax: the head trains */
    mt_train_config cfg;
    config(&cfg, MT_OPTIMIZER_SGD, MT_LOSS_MSE, 2);
    cfg.trainable_op_mask = mask;
    mt_memory_plan plan;
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), MT_OK);
    guarded g = arena_of(plan.total_bytes + 64);
    mt_session *s = NULL;
    mt_memory_plan edited;
    mt_train_config other;

    /* arguments */
    CHECK_STATUS(mt_session_init_from_plan(NULL, &plan, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, NULL, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, NULL, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, NULL, g.bytes), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena + 4, g.bytes - 16), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena, plan.total_bytes - 1),
                 MT_ERR_ARENA_TOO_SMALL);
    /* not as mt_plan() wrote it: a figure, the binding, the seal itself; a zeroed plan */
    edited = plan, edited.total_bytes -= 16;
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    edited = plan, edited.image_bytes += 4;
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    edited = plan, edited.seal ^= 1u;
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    memset(&edited, 0, sizeof edited);
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    /* another library's plan, sealed */
    edited = plan, edited.abi_version = MT_ABI_VERSION - 1u, reseal(&edited);
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    /* another configuration: a value, the mask's bytes behind the same pointer, no mask */
    other = cfg, other.learning_rate = 0.02f;
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &other, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    mask[0] = 1;
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    mask[0] = 0;
    other = cfg, other.trainable_op_mask = NULL;
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &other, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    CHECK(arena_untouched(&g));

    /* the image at the plan's address changed since: a table byte; another image with the
     * same tables (new weights, its CRC refreshed); a header no longer valid */
    uint8_t *copy = malloc(bytes);
    memcpy(copy, img, bytes);
    uint32_t tensors_offset;
    memcpy(&tensors_offset, img + 32, 4); /* little-endian host */
    img[tensors_offset + 4] ^= 1u;         /* a dimension of tensor 0 */
    ib_refresh_crc(img);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    memcpy(img, copy, bytes);
    uint32_t data_offset;
    memcpy(&data_offset, img + 44, 4);
    img[data_offset] ^= 0x40u; /* a weight */
    ib_refresh_crc(img);
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    memcpy(img, copy, bytes);
    img[0] = 'X';
    CHECK_STATUS(mt_session_init_from_plan(&s, &plan, &cfg, g.arena, g.bytes), MT_ERR_BAD_MODEL);
    memcpy(img, copy, bytes);
    CHECK(arena_untouched(&g));

    /* forged on purpose with other figures, sealed: laid out within the arena all the same,
     * then refused (a larger total), or refused before a byte is written (a smaller one) */
    edited = plan, edited.total_bytes += 64, reseal(&edited);
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    CHECK(guards_intact(&g));
    guarded small = arena_of(plan.total_bytes - 16);
    edited = plan, edited.total_bytes -= 16, reseal(&edited);
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, small.arena, small.bytes), MT_ERR_ARENA_TOO_SMALL);
    CHECK(arena_untouched(&small));

    /* a placement order that is none of the planner's; every other order places without
     * overlap, so init either refuses the other figures it comes to or lays out as planned */
    edited = plan, edited.placement_order = 4, reseal(&edited);
    CHECK_STATUS(mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes), MT_ERR_BAD_ARGUMENT);
    for (int32_t order = 0; order < 4; order++) {
        edited = plan, edited.placement_order = order, reseal(&edited);
        const mt_status st = mt_session_init_from_plan(&s, &edited, &cfg, g.arena, g.bytes);
        CHECK(st == (order == plan.placement_order ? MT_OK : st) && (st == MT_OK || st == MT_ERR_BAD_ARGUMENT));
        CHECK(guards_intact(&g));
    }

    /* the plan restored and kept in the arena itself: read before the arena is zeroed */
    memcpy(g.arena, &plan, sizeof plan);
    CHECK_STATUS(mt_session_init_from_plan(&s, (const mt_memory_plan *)(const void *)g.arena, &cfg, g.arena,
                                           g.bytes),
                 MT_OK);
    mt_memory_plan kept;
    CHECK_STATUS(mt_session_plan(s, &kept), MT_OK);
    CHECK(memcmp(&kept, &plan, sizeof plan) == 0);
    CHECK(guards_intact(&g));
    /* a plan serves again: the session's own plan opens a second session elsewhere */
    guarded h = arena_of(plan.total_bytes);
    mt_session *t = NULL;
    CHECK_STATUS(mt_session_init_from_plan(&t, &kept, &cfg, h.arena, h.bytes), MT_OK);
    CHECK(same_params(s, t) && guards_intact(&h));
    free(copy), free(g.block), free(h.block), free(small.block), free(img);
}

/* mt_session_io: the model's inputs and outputs from the session, as mt_model_tensor(). */
static void test_session_io_describes_inputs_and_outputs(void)
{
    size_t bytes;
    uint8_t *img = mlp_image(&bytes);
    mt_train_config cfg;
    config(&cfg, MT_OPTIMIZER_SGD, MT_LOSS_MSE, 3);
    guarded g;
    CHECK_STATUS(open_guarded(&g, img, bytes, &cfg), MT_OK);
    for (int32_t is_output = 0; is_output <= 1; is_output++) {
        mt_tensor_info from_session, from_image;
        int32_t index = -1;
        count_work_on(img, bytes);
        CHECK_STATUS(mt_session_io(g.s, is_output, 0, &from_session), MT_OK);
        CHECK_WORK(0, 0, 0, 0, 0, 0);
        CHECK_STATUS(mt_model_io(img, bytes, is_output, 0, &index), MT_OK);
        CHECK_STATUS(mt_model_tensor(img, bytes, index, &from_image), MT_OK);
        CHECK(memcmp(&from_session, &from_image, sizeof from_image) == 0);
        CHECK_EQ_INT(from_session.index, index);
        CHECK_EQ_INT(from_session.dtype, MT_DTYPE_F32);
        CHECK_EQ_INT(from_session.dims[0], is_output ? 2 : 3);
    }
    count_work_on(NULL, 0);
    mt_tensor_info info;
    CHECK_STATUS(mt_session_io(g.s, 0, 1, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_io(g.s, 1, -1, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_io(g.s, 2, 0, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_io(g.s, 0, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_session_io(NULL, 0, 0, &info), MT_ERR_BAD_ARGUMENT);
    free(g.block), free(img);
}

int main(void)
{
    test_one_compile_validates_once_and_plans_once();
    test_init_refuses_a_plan_that_does_not_belong();
    test_session_io_describes_inputs_and_outputs();
    return MT_TEST_END();
}
