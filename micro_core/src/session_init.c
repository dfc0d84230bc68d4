/*
 * Plan and init: the plan as a value. mt_plan() validates the image (its CRC over every byte,
 * the tables, each op's checks) and plans it; the plan it writes records what it was made
 * for, so that mt_session_init_from_plan() lays the session out without validating or sizing
 * again:
 *
 *   image, image_bytes   the address and size mt_plan() was given
 *   image_tables_crc32   CRC-32 of the header (whose CRC-32 of the whole image mt_plan()
 *                        verified) and of the tensor, op and io tables: what the layout reads
 *   config_crc32         CRC-32 of the configuration's values, its op mask and channel counts
 *   abi_version          the library's MT_ABI_VERSION
 *   seal                 CRC-32 of every byte before it, from MT_PLAN_SEAL_SEED
 *
 * Init checks these in O(header + tables) (9.7 KB of the 642 KB MobileNetV2 image, where the
 * validation reads all of it and runs every op's checks), refuses a plan of another image,
 * configuration or library, or one edited since mt_plan() wrote it, and then runs the
 * planner's build pass on the trusted image (planner.c: which weights train, the lifetimes,
 * the placement in the order the plan kept, one greedy pass where mt_plan() tried five, and
 * the arena's layout; its figures must be the plan's). The seal is a checksum, not a signature: it catches a plan
 * that is stale, edited or garbage, not code of the same program that forges one on purpose
 * (which could as well write over the arena).
 */
#include <stddef.h>
#include <string.h>

#include "microtrain.h"
#include "le_bytes.h"
#include "session.h"

#define MT_PLAN_SEAL_SEED 0x6D74706Cu /* "mtpl": a zeroed plan does not seal to 0 */

/* The plan's bytes up to its seal have no padding (every field is naturally aligned after the
 * one before), so the seal covers exactly the values. */
typedef char plan_seal_is_last[offsetof(mt_memory_plan, seal) + sizeof(uint32_t) == sizeof(mt_memory_plan) ? 1 : -1];

/* CRC-32 of the header and the tables the layout reads (op entries with their layer byte). */
static uint32_t tables_crc32(const mt_image *img)
{
    uint32_t crc = mt_crc32_update(0, img->base, MT_IMAGE_HEADER_BYTES);
    crc = mt_crc32_update(crc, img->base + img->tensors_offset, img->num_tensors * MT_IMAGE_ENTRY_BYTES);
    crc = mt_crc32_update(crc, img->base + img->ops_offset, img->num_ops * MT_IMAGE_ENTRY_BYTES);
    return mt_crc32_update(crc, img->base + img->io_offset, 2u * (img->num_inputs + img->num_outputs));
}

/* CRC-32 of every value of cfg (floats as their bits) and, when it has them, its op mask
 * (num_ops bytes, as the planner reads them) and its channel counts (num_ops int32, their
 * little-endian bytes; a configuration without them has the CRC it had before they existed). */
static uint32_t config_crc32(const mt_train_config *cfg, uint32_t num_ops)
{
    uint32_t words[16];
    const float floats[7] = {cfg->learning_rate, cfg->beta1, cfg->beta2, cfg->epsilon, cfg->momentum,
                             cfg->weight_decay, cfg->proximal_mu};
    words[0] = (uint32_t)cfg->optimizer;
    words[1] = (uint32_t)cfg->loss;
    words[2] = (uint32_t)cfg->reduction;
    words[3] = (uint32_t)cfg->batch_size;
    words[4] = (uint32_t)cfg->num_trainable_ops;
    words[5] = (uint32_t)cfg->biases_only;
    words[6] = (uint32_t)cfg->accumulate_gradients;
    words[7] = (uint32_t)cfg->guard_gradients;
    words[8] = cfg->trainable_op_mask != NULL;
    memcpy(words + 9, floats, sizeof floats);
    uint32_t crc = mt_crc32_update(0, words, sizeof words);
    if (cfg->trainable_op_mask) crc = mt_crc32_update(crc, cfg->trainable_op_mask, num_ops);
    for (uint32_t o = 0; cfg->trainable_op_channels && o < num_ops; ++o) {
        uint8_t bytes[4];
        mt_put_u32(bytes, (uint32_t)cfg->trainable_op_channels[o]);
        crc = mt_crc32_update(crc, bytes, 4);
    }
    return crc;
}

static uint32_t seal_of(const mt_memory_plan *plan)
{
    return mt_crc32_update(MT_PLAN_SEAL_SEED, plan, offsetof(mt_memory_plan, seal));
}

/* Record in plan what it was made for, and seal it. */
static void bind_plan(mt_memory_plan *plan, const void *image, size_t image_bytes, const mt_image *img,
                      const mt_train_config *cfg)
{
    plan->image = image;
    plan->image_bytes = image_bytes;
    plan->image_tables_crc32 = tables_crc32(img);
    plan->config_crc32 = config_crc32(cfg, img->num_ops);
    plan->abi_version = MT_ABI_VERSION;
    plan->seal = seal_of(plan);
}

/* Does plan belong to this library, to the image it names (unchanged in header and tables
 * since) and to cfg? On MT_OK, img is that image, opened without validating it again. */
static mt_status check_binding(const mt_memory_plan *plan, const mt_train_config *cfg, mt_image *img)
{
    if (plan->seal != seal_of(plan) || plan->abi_version != MT_ABI_VERSION) return MT_ERR_BAD_ARGUMENT;
    mt_status st = mt_image_open_header(img, plan->image, plan->image_bytes);
    if (st != MT_OK) return st;
    if (plan->image_tables_crc32 != tables_crc32(img)) return MT_ERR_BAD_ARGUMENT;
    if (plan->config_crc32 != config_crc32(cfg, img->num_ops)) return MT_ERR_BAD_ARGUMENT;
    return MT_OK;
}

/* The figures of a plan (everything before the binding), to compare two plans' layouts. */
static int same_figures(const mt_memory_plan *a, const mt_memory_plan *b)
{
    return memcmp(a, b, offsetof(mt_memory_plan, image)) == 0;
}

mt_status mt_plan(const void *image, size_t image_bytes, const mt_train_config *cfg, mt_memory_plan *plan)
{
    if (image == NULL || cfg == NULL || plan == NULL) return MT_ERR_BAD_ARGUMENT;
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK) return st;
    mt_memory_plan p;
    if ((st = mt_plan_layout(&img, cfg, &p)) != MT_OK) return st;
    bind_plan(&p, image, image_bytes, &img, cfg);
    *plan = p;
    return MT_OK;
}

mt_status mt_plan_buffers(const void *image, size_t image_bytes, const mt_train_config *cfg,
                          mt_buffer_fn report, void *user)
{
    if (image == NULL || cfg == NULL || report == NULL) return MT_ERR_BAD_ARGUMENT;
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK) return st;
    return mt_plan_report(&img, cfg, report, user);
}

mt_status mt_model_diagnose(const void *image, size_t image_bytes, const mt_train_config *cfg,
                            mt_error_detail *detail)
{
    if (detail == NULL) return MT_ERR_BAD_ARGUMENT;
    mt_fail_at(detail, MT_OK, -1, 0, -1);
    mt_image img;
    mt_status st = mt_image_open_at(&img, image, image_bytes, detail);
    if (st != MT_OK || cfg == NULL) return st;
    return mt_plan_diagnose(&img, cfg, detail);
}

mt_status mt_session_init(mt_session **session, const void *image, size_t image_bytes,
                          const mt_train_config *cfg, void *arena, size_t arena_bytes)
{
    if (session == NULL || image == NULL || cfg == NULL || arena == NULL) return MT_ERR_BAD_ARGUMENT;
    if (((uintptr_t)arena) % MT_ARENA_ALIGN) return MT_ERR_BAD_ARGUMENT;
    mt_image img;
    mt_status st = mt_image_open(&img, image, image_bytes);
    if (st != MT_OK) return st;
    mt_memory_plan plan;
    mt_session *s;
    if ((st = mt_plan_build(&img, cfg, NULL, (uint8_t *)arena, arena_bytes, &plan, &s)) != MT_OK) return st;
    bind_plan(&s->plan, image, image_bytes, &img, cfg);
    *session = s;
    return MT_OK;
}

mt_status mt_session_init_from_plan(mt_session **session, const mt_memory_plan *plan, const mt_train_config *cfg,
                                    void *arena, size_t arena_bytes)
{
    if (session == NULL || plan == NULL || cfg == NULL || arena == NULL) return MT_ERR_BAD_ARGUMENT;
    if (((uintptr_t)arena) % MT_ARENA_ALIGN) return MT_ERR_BAD_ARGUMENT;
    const mt_memory_plan planned = *plan; /* the caller's copy may lie in the arena */
    mt_image img;
    mt_status st = check_binding(&planned, cfg, &img);
    if (st != MT_OK) return st;
    if (arena_bytes < planned.total_bytes) return MT_ERR_ARENA_TOO_SMALL;
    mt_memory_plan built;
    mt_session *s;
    if ((st = mt_plan_build(&img, cfg, &planned, (uint8_t *)arena, arena_bytes, &built, &s)) != MT_OK) return st;
    /* a plan whose binding holds is this layout's own; a forged one with other figures lays out
     * within arena_bytes all the same (the build pass checks), and is refused here */
    if (!same_figures(&built, &planned)) {
        s->magic = 0;
        return MT_ERR_BAD_ARGUMENT;
    }
    s->plan = planned;
    *session = s;
    return MT_OK;
}
