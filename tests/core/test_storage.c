/*
 * Power-loss-safe checkpoint storage (microtrain_storage.h) on a simulated NOR flash:
 *   - erase sets a sector to 0xFF; program can only clear bits, in whole aligned units, and
 *     the simulator counts any program of a unit that was not erased;
 *   - power is lost after a budget of byte events (each erased or programmed byte is one):
 *     an interrupted program leaves the byte at the cut partly programmed (random bits), an
 *     interrupted erase leaves the rest of the sector as it was; every later call fails.
 * For every cut point of a save (every byte of every erase and program), after "reboot" a
 * load returns the old or the new checkpoint: the weights equal one of the two exactly and
 * the step counter is the same one's (never a mix), and never nothing once one complete
 * checkpoint existed. Also: nested cuts, sequence wrap-around, a corrupted newest slot
 * falling back to the older, blank flash, bad geometry, a slot too small, no byte written
 * outside the two slots. Three geometries: program units of 1, 8 and 64 bytes.
 */
#include <stdint.h>
#include <stdlib.h>

#include "image_builder.h"
#include "microtrain.h"
#include "microtrain_storage.h"
#include "mt_test.h"

#define FLASH_BYTES 8192
#define MAX_FLOATS 256
#define PAD 0x5A /* fills the flash outside the slots: must never change */

/* ---- the simulated NOR flash ------------------------------------------------------------ */

typedef struct nor {
    uint8_t mem[FLASH_BYTES];
    size_t sector, unit;
    long budget;     /* byte events left before the power fails; < 0: unlimited */
    int dead;        /* power lost: every call fails until reboot() */
    long events;     /* byte events so far */
    int violations;  /* misaligned program/erase, or program of a unit not erased */
} nor;

static mt_status nor_tick(nor *f)
{
    if (f->dead) return MT_ERR_IO;
    if (f->budget == 0) {
        f->dead = 1;
        return MT_ERR_IO;
    }
    if (f->budget > 0) f->budget--;
    f->events++;
    return MT_OK;
}

static mt_status nor_erase(void *user, size_t offset)
{
    nor *f = user;
    if (f->dead) return MT_ERR_IO;
    if (offset % f->sector || offset + f->sector > FLASH_BYTES) {
        f->violations++;
        return MT_ERR_IO;
    }
    for (size_t i = 0; i < f->sector; ++i) {
        if (nor_tick(f) != MT_OK) {
            f->mem[offset + i] |= (uint8_t)mt_test_rand_u32(); /* half-erased byte */
            return MT_ERR_IO;
        }
        f->mem[offset + i] = 0xFF;
    }
    return MT_OK;
}

static mt_status nor_program(void *user, size_t offset, const void *data, size_t bytes)
{
    nor *f = user;
    const uint8_t *p = data;
    if (f->dead) return MT_ERR_IO;
    if (offset % f->unit || bytes % f->unit || offset + bytes > FLASH_BYTES) {
        f->violations++;
        return MT_ERR_IO;
    }
    for (size_t u = 0; u < bytes; u += f->unit) /* each unit once per erase */
        for (size_t i = 0; i < f->unit; ++i)
            if (f->mem[offset + u + i] != 0xFF) {
                f->violations++;
                break;
            }
    for (size_t i = 0; i < bytes; ++i) {
        if (nor_tick(f) != MT_OK) {
            f->mem[offset + i] &= (uint8_t)(p[i] | mt_test_rand_u32()); /* some bits cleared */
            return MT_ERR_IO;
        }
        f->mem[offset + i] &= p[i];
    }
    return MT_OK;
}

static mt_status nor_read(void *user, size_t offset, void *data, size_t bytes)
{
    nor *f = user;
    if (f->dead || offset > FLASH_BYTES || bytes > FLASH_BYTES - offset) return MT_ERR_IO;
    memcpy(data, f->mem + offset, bytes);
    return MT_OK;
}

static void reboot(nor *f)
{
    f->dead = 0;
    f->budget = -1;
}

/* Geometry: pad sector, slot A, slot B, pad to the end. */
static mt_flash flash_of(nor *f, size_t sector, size_t unit, size_t slot_sectors)
{
    memset(f, 0, sizeof *f);
    memset(f->mem, PAD, sizeof f->mem);
    f->sector = sector;
    f->unit = unit;
    f->budget = -1;
    mt_flash fl = {nor_erase, nor_program, nor_read, f, sector, unit, {sector, sector * (1 + slot_sectors)},
                   sector * slot_sectors};
    return fl;
}

static int outside_untouched(const nor *f, const mt_flash *fl)
{
    for (size_t i = 0; i < FLASH_BYTES; ++i) {
        int inside = 0;
        for (int k = 0; k < 2; ++k)
            if (i >= fl->slot_offset[k] && i < fl->slot_offset[k] + fl->slot_bytes) inside = 1;
        if (!inside && f->mem[i] != PAD) return 0;
    }
    return 1;
}

/* ---- sessions and their states ---------------------------------------------------------- */

typedef struct state {
    float w[MAX_FLOATS];
    int n;
    int64_t step;
} state;

static uint8_t *image;
static size_t image_bytes;
static uint8_t arena_train[32768] __attribute__((aligned(16)));
static uint8_t arena_load[32768] __attribute__((aligned(16)));

static mt_session *open_session(uint8_t *arena, size_t bytes)
{
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    cfg.optimizer = MT_OPTIMIZER_ADAM;
    cfg.batch_size = 2;
    mt_session *s = NULL;
    if (!CHECK_STATUS(mt_session_init(&s, image, image_bytes, &cfg, arena, bytes), MT_OK)) exit(1);
    return s;
}

static void capture(mt_session *s, state *st)
{
    int32_t count;
    st->n = 0;
    mt_session_param_count(s, &count);
    for (int32_t p = 0; p < count; ++p) {
        mt_param_info info;
        mt_session_param(s, p, &info);
        const float *src = info.trained ? info.data : info.image_data;
        memcpy(st->w + st->n, src, (size_t)info.count * sizeof(float));
        st->n += info.count;
    }
    mt_session_counters(s, &st->step, NULL);
}

static int same(const state *a, const state *b)
{
    return a->n == b->n && a->step == b->step && memcmp(a->w, b->w, (size_t)a->n * sizeof(float)) == 0;
}

static void train(mt_session *s, int steps)
{
    for (int k = 0; k < steps; ++k) {
        float *x;
        void *y;
        int32_t count, bytes;
        mt_session_input(s, 0, &x, &count);
        mt_session_target(s, &y, &bytes);
        for (int32_t i = 0; i < count; ++i) x[i] = mt_test_uniform(-1.0f, 1.0f);
        for (int32_t i = 0; i < bytes / 4; ++i) ((float *)y)[i] = mt_test_uniform(-1.0f, 1.0f);
        mt_session_train_step(s, 2, NULL);
    }
}

/* Load what the flash holds into a fresh session (weights from the image). Returns the
 * status; *got is the loaded state. */
static mt_status load_fresh(const mt_flash *fl, state *got)
{
    mt_session *s = open_session(arena_load, sizeof arena_load);
    mt_status st = mt_storage_load(s, fl, NULL, NULL);
    capture(s, got);
    return st;
}

static const mt_property prop = {"note", MT_PROPERTY_STRING, 0, 0, 0.0, "power-loss test"};

/* ---- the power-cut sweep ---------------------------------------------------------------- */

/* From flash contents `before` (holding `old`, or nothing when old == NULL), save the training
 * session (state `next`) with the power cut after every possible number of byte events. */
static void sweep(nor *f, const mt_flash *fl, const uint8_t *before, mt_session *trainer,
                  const state *old, const state *next, const char *what)
{
    /* the number of events a complete save takes */
    memcpy(f->mem, before, FLASH_BYTES);
    reboot(f);
    f->events = 0;
    CHECK_STATUS(mt_storage_save(trainer, 1, &prop, 1, fl), MT_OK);
    const long total = f->events;
    CHECK(total > 0);

    int bad = 0, saw_old = 0, saw_new = 0, saw_none = 0;
    for (long cut = 0; cut <= total; ++cut) {
        memcpy(f->mem, before, FLASH_BYTES);
        reboot(f);
        f->budget = cut;
        mt_status saved = mt_storage_save(trainer, 1, &prop, 1, fl);
        if (cut < total && saved == MT_OK) bad++;           /* a cut must be reported */
        reboot(f);
        state got;
        mt_status st = load_fresh(fl, &got);
        if (st == MT_OK && same(&got, next)) saw_new++;
        else if (st == MT_OK && old && same(&got, old)) saw_old++;
        else if (st == MT_ERR_BAD_CHECKPOINT && old == NULL) saw_none++;
        else {
            if (bad < 5) printf("    %s: cut at %ld of %ld: status %d, neither old nor new\n", what, cut, total, st);
            bad++;
        }
        if (cut == total && !same(&got, next)) bad++;        /* no cut: the new one */
    }
    printf("  %s: %ld cut points: %d old, %d new, %d none\n", what, total + 1, saw_old, saw_new, saw_none);
    CHECK_EQ_INT(bad, 0);
    CHECK(saw_new >= 1);
    CHECK(old == NULL ? saw_none >= 1 : saw_old >= 1);
}

/* A cut during one save, then a cut during the next: whatever completed last survives. */
static void nested(nor *f, const mt_flash *fl, const uint8_t *before, mt_session *trainer,
                   const state *a, long total)
{
    int bad = 0, runs = 0;
    for (long cut1 = 0; cut1 < total; cut1 += 53) {
        for (long cut2 = 0; cut2 < total; cut2 += 71) {
            memcpy(f->mem, before, FLASH_BYTES);
            reboot(f);
            f->budget = cut1;
            mt_storage_save(trainer, 1, &prop, 1, fl); /* state b, cut */
            reboot(f);
            state after1;
            if (load_fresh(fl, &after1) != MT_OK) bad++;
            f->budget = cut2;
            mt_storage_save(trainer, 1, &prop, 1, fl); /* state b again, cut */
            reboot(f);
            state got;
            mt_status st = load_fresh(fl, &got);
            state b;
            capture(trainer, &b);
            if (st != MT_OK || !(same(&got, a) || same(&got, &b))) bad++;
            if (same(&after1, &b) && !same(&got, &b)) bad++; /* a committed save is never lost */
            runs++;
        }
    }
    printf("  nested cuts: %d pairs\n", runs);
    CHECK_EQ_INT(bad, 0);
}

/* After a swept save: the flash as it was before it, rebooted, the save made uncut (and, where
 * `saved` is given, loaded back as that state); then `before` is that flash and `next` the
 * trainer's state `steps` steps later, what the next swept save writes. */
static void commit_then_train(nor *f, mt_flash *fl, uint8_t *before, mt_session *trainer, const state *saved,
                              int steps, state *next)
{
    static state got;
    memcpy(f->mem, before, FLASH_BYTES);
    reboot(f);
    CHECK_STATUS(mt_storage_save(trainer, 1, &prop, 1, fl), MT_OK);
    if (saved) {
        CHECK_STATUS(load_fresh(fl, &got), MT_OK);
        CHECK(same(&got, saved));
    }
    memcpy(before, f->mem, FLASH_BYTES);
    train(trainer, steps);
    capture(trainer, next);
}

static void test_power_cuts(size_t sector, size_t unit, size_t slot_sectors)
{
    printf("geometry: sector %zu, program unit %zu, slot %zu sectors\n", sector, unit, slot_sectors);
    static nor f;
    static uint8_t before[FLASH_BYTES];
    mt_flash fl = flash_of(&f, sector, unit, slot_sectors);
    mt_session *trainer = open_session(arena_train, sizeof arena_train);
    state a, b, c, got;

    /* blank flash: nothing to load, and the scan says so */
    mt_storage_info info;
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, -1);
    CHECK_STATUS(load_fresh(&fl, &got), MT_ERR_BAD_CHECKPOINT);

    /* the very first save, cut everywhere: nothing or A */
    train(trainer, 2);
    capture(trainer, &a);
    memcpy(before, f.mem, FLASH_BYTES);
    sweep(&f, &fl, before, trainer, NULL, &a, "first save (blank flash)");

    /* A committed (slot A); save B cut everywhere: A or B */
    commit_then_train(&f, &fl, before, trainer, NULL, 3, &b);
    sweep(&f, &fl, before, trainer, &a, &b, "second save (into slot B)");

    /* A and B committed; save C (into slot A, overwriting A) cut everywhere: B or C */
    commit_then_train(&f, &fl, before, trainer, &b, 1, &c);
    sweep(&f, &fl, before, trainer, &b, &c, "third save (into slot A)");

    /* nested cuts from the two-checkpoint state: B survives until C is committed */
    memcpy(f.mem, before, FLASH_BYTES);
    reboot(&f);
    f.events = 0;
    mt_storage_save(trainer, 1, &prop, 1, &fl);
    nested(&f, &fl, before, trainer, &b, f.events);

    CHECK_EQ_INT(f.violations, 0);
    CHECK(outside_untouched(&f, &fl));
}

/* ---- slot headers by hand (the layout documented in microtrain_storage.h) -------------- */

static void rewrite_header(nor *f, size_t slot, uint32_t sequence)
{
    uint8_t *h = f->mem + slot;
    ib_put_u32(h, 8, sequence);
    ib_put_u32(h, 28, ib_crc32(h, 28));
}

static void test_sequence_wraps(void)
{
    static nor f;
    mt_flash fl = flash_of(&f, 128, 4, 6);
    mt_session *trainer = open_session(arena_train, sizeof arena_train);
    state a, b, c, got;
    train(trainer, 1);
    capture(trainer, &a);
    CHECK_STATUS(mt_storage_save(trainer, 1, NULL, 0, &fl), MT_OK);
    rewrite_header(&f, fl.slot_offset[0], 0xFFFFFFFFu); /* as if 2^32 - 1 saves had happened */
    mt_storage_info info;
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, 0);
    CHECK_EQ_INT(info.slot[0].sequence, 0xFFFFFFFFu);

    train(trainer, 1);
    capture(trainer, &b);
    CHECK_STATUS(mt_storage_save(trainer, 1, NULL, 0, &fl), MT_OK);
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, 1);
    CHECK_EQ_INT(info.slot[1].sequence, 0); /* wrapped, and still the newer */
    CHECK_STATUS(load_fresh(&fl, &got), MT_OK);
    CHECK(same(&got, &b));

    train(trainer, 1);
    capture(trainer, &c);
    CHECK_STATUS(mt_storage_save(trainer, 1, NULL, 0, &fl), MT_OK); /* into slot 0, sequence 1 */
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, 0);
    CHECK_EQ_INT(info.slot[0].sequence, 1);
    CHECK_STATUS(load_fresh(&fl, &got), MT_OK);
    CHECK(same(&got, &c));
    (void)a;
}

static void test_corrupt_newest_falls_back(void)
{
    static nor f;
    static uint8_t two[FLASH_BYTES];
    mt_flash fl = flash_of(&f, 256, 8, 4);
    const size_t area = 32; /* header rounded up to 8 */
    mt_session *trainer = open_session(arena_train, sizeof arena_train);
    state a, b, c, got;
    train(trainer, 2);
    capture(trainer, &a);
    CHECK_STATUS(mt_storage_save(trainer, 1, &prop, 1, &fl), MT_OK); /* slot 0 */
    train(trainer, 2);
    capture(trainer, &b);
    CHECK_STATUS(mt_storage_save(trainer, 1, &prop, 1, &fl), MT_OK); /* slot 1, newest */
    memcpy(two, f.mem, FLASH_BYTES);
    const size_t newest = fl.slot_offset[1];
    mt_storage_info info;
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_OK);
    const uint32_t payload = info.slot[1].payload_bytes;

    /* a bit flipped anywhere in the newest payload or header: the older one loads */
    int bad = 0;
    for (size_t off = 0; off < area + payload; off += 7) {
        memcpy(f.mem, two, FLASH_BYTES);
        f.mem[newest + off] ^= 0x10;
        if (off >= 32 && off < area) continue; /* header padding: not covered, not read */
        if (load_fresh(&fl, &got) != MT_OK || !same(&got, &a)) bad++;
    }
    CHECK_EQ_INT(bad, 0);

    /* storage-valid but a broken checkpoint (payload and both CRCs of the slot refreshed):
     * mt_checkpoint_load refuses it and the older slot loads */
    memcpy(f.mem, two, FLASH_BYTES);
    f.mem[newest + area + 100] ^= 0x01;
    ib_put_u32(f.mem + newest, 16, ib_crc32(f.mem + newest + area, payload));
    ib_put_u32(f.mem + newest, 28, ib_crc32(f.mem + newest, 28));
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_OK);
    CHECK_EQ_INT(info.newest, 1);
    CHECK_STATUS(load_fresh(&fl, &got), MT_OK);
    CHECK(same(&got, &a));

    /* a corrupted newest is not "the newest": the next save keeps the good one */
    memcpy(f.mem, two, FLASH_BYTES);
    f.mem[newest + area + 3] ^= 0x80;
    train(trainer, 1);
    capture(trainer, &c);
    CHECK_STATUS(mt_storage_save(trainer, 1, &prop, 1, &fl), MT_OK); /* rewrites slot 1 */
    CHECK_STATUS(load_fresh(&fl, &got), MT_OK);
    CHECK(same(&got, &c));
    f.mem[newest + area + 3] ^= 0x80; /* break C: A is still there */
    CHECK_STATUS(load_fresh(&fl, &got), MT_OK);
    CHECK(same(&got, &a));

    /* both broken: nothing */
    f.mem[fl.slot_offset[0] + area + 5] ^= 0x01;
    CHECK_STATUS(load_fresh(&fl, &got), MT_ERR_BAD_CHECKPOINT);
    CHECK_EQ_INT(f.violations, 0);
}

static mt_status stop_at_first(void *user, const mt_property *p)
{
    (void)p;
    ++*(int *)user;
    return MT_ERR_UNSUPPORTED;
}

static void test_arguments(void)
{
    static nor f;
    mt_flash fl = flash_of(&f, 128, 1, 8);
    mt_session *s = open_session(arena_train, sizeof arena_train);
    mt_storage_info info;
    CHECK_STATUS(mt_storage_scan(NULL, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_scan(&fl, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_save(NULL, 1, NULL, 0, &fl), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_save(s, 1, NULL, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_save(s, 2, NULL, 0, &fl), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_save(s, 1, NULL, 1, &fl), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_load(NULL, &fl, NULL, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_storage_load(s, NULL, NULL, NULL), MT_ERR_BAD_ARGUMENT);

    const mt_flash good = fl;
    mt_flash g;
    g = good, g.erase = NULL;            CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.program = NULL;          CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.read = NULL;             CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.sector_bytes = 0;        CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.program_bytes = 0;       CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.program_bytes = 3;       CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.program_bytes = 128;     CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.slot_bytes = 100;        CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.slot_bytes = 0;          CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.slot_offset[1] = g.slot_offset[0] + 128; /* overlapping slots */
    CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.slot_offset[1] = 64;     CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);
    g = good, g.slot_offset[1] = (size_t)-128; /* end would wrap */
    CHECK_STATUS(mt_storage_scan(&g, &info), MT_ERR_BAD_ARGUMENT);

    /* a slot too small for the checkpoint: refused before anything is erased */
    size_t need;
    mt_checkpoint_bytes(s, 1, NULL, 0, &need);
    g = good;
    g.slot_bytes = 128 * ((need + 32) / 128); /* one sector short at most, never enough */
    if (g.slot_bytes >= need + 32) g.slot_bytes -= 128;
    if (g.slot_bytes < 128) g.slot_bytes = 128;
    long events = f.events;
    CHECK_STATUS(mt_storage_save(s, 1, NULL, 0, &g), MT_ERR_BAD_ARGUMENT);
    CHECK_EQ_INT(f.events, events);

    /* a read failure is an I/O error, not a crash or a "no checkpoint" */
    CHECK_STATUS(mt_storage_save(s, 1, &prop, 1, &fl), MT_OK);
    f.dead = 1;
    CHECK_STATUS(mt_storage_scan(&fl, &info), MT_ERR_IO);
    CHECK_STATUS(mt_storage_load(s, &fl, NULL, NULL), MT_ERR_IO);
    reboot(&f);

    /* the caller's property callback stops the load: its status, no fallback to the other slot */
    CHECK_STATUS(mt_storage_save(s, 1, &prop, 1, &fl), MT_OK);
    int calls = 0;
    CHECK_STATUS(mt_storage_load(s, &fl, stop_at_first, &calls), MT_ERR_UNSUPPORTED);
    CHECK_EQ_INT(calls, 1);

    /* a checkpoint of another model: mismatch, reported as such */
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 5, spec.hidden = 3, spec.out = 2, spec.hidden_act = MT_OP_RELU;
    size_t other_bytes;
    uint8_t *other = ib_build_mlp(&spec, &other_bytes);
    mt_train_config cfg;
    mt_train_config_init(&cfg);
    mt_session *o;
    CHECK_STATUS(mt_session_init(&o, other, other_bytes, &cfg, arena_load, sizeof arena_load), MT_OK);
    CHECK_STATUS(mt_storage_load(o, &fl, NULL, NULL), MT_ERR_CHECKPOINT_MISMATCH);
    free(other);
    CHECK_EQ_INT(f.violations, 0);
}

int main(void)
{
    ib_mlp_spec spec;
    ib_mlp_defaults(&spec);
    spec.in = 3, spec.hidden = 4, spec.out = 2, spec.hidden_act = MT_OP_TANH;
    image = ib_build_mlp(&spec, &image_bytes);
    mt_test_seed(42);
    test_power_cuts(128, 1, 6);
    test_power_cuts(256, 8, 3);
    test_power_cuts(64, 64, 12);
    test_sequence_wraps();
    test_corrupt_newest_falls_back();
    test_arguments();
    free(image);
    return MT_TEST_END();
}
