/*
 * The DSP cores' channel planes for the depthwise rows (depthwise_s8_rows.h includes it where
 * MT_DW3, after its groups: ops/dsp/depthwise_s8_dsp.h has the form): the slots of a channel
 * group, whether the form takes a row, and an output row in it (dw3_row).
 */
#ifndef MT_OPS_PORTABLE_DEPTHWISE_S8_PLANES_H
#define MT_OPS_PORTABLE_DEPTHWISE_S8_PLANES_H

/* Outputs a channel's run of the planes' form: twice MT_S8_RUN (512 bytes of sums), as a call
 * a channel and its requantization's setup took a fifth of the products' instructions */
#define DW3_RUN (2u * MT_S8_RUN)

/* The planes' slots (ops/dsp/depthwise_s8_dsp.h) of one channel group: their bytes and the
 * input row each holds (at channel c; NULL: a row of the padding; valid 0: nothing yet). A
 * row's address names it: within a call of a kernel no two input rows share one. */
typedef struct dw3_planes {
    int8_t bytes[MT_DW3_PLANE_BYTES];
    const int8_t *holds[3];
    int valid[3];
} dw3_planes;

/* The planes for a new channel group: nothing held. whole: the group's output rows are a
 * whole tensor's, in order (each input row copied once), else one row a call (the fused
 * expansion's: three rows copied for each), whose copies and setup cost more than the
 * products gain in rows narrower than MT_DW3_ROW_MIN outputs */
static void dw3_attach(dw_group *grp, dw3_planes *planes, int whole)
{
    planes->valid[0] = planes->valid[1] = planes->valid[2] = 0;
    grp->planes = planes, grp->min_ow = whole ? 1u : MT_DW3_ROW_MIN;
}

/* Whether the planes' form takes channels c..c+n-1 of g: four of them, a 3 x 3 kernel at
 * stride 1, rows of Wp = OW + MT_DW3_PAD_COLS columns that fit MT_DW3_PLANE_BYTES, and the
 * family's limits (mt_s8_dw3_fits: the padding, the pixel size) */
static int dw3_applies(const dw_group *grp, const mt_spatial *g, uint32_t n)
{
    const uint32_t Wp = g->OW + MT_DW3_PAD_COLS;
    return n == 4 && g->OW >= grp->min_ow && g->KH == 3 && g->KW == 3 && g->SH == 1 && g->SW == 1 && 12u * Wp <= MT_DW3_PLANE_BYTES &&
           Wp >= g->PL + g->W && mt_s8_dw3_fits(g->W, g->C, g->PL, Wp);
}

/* Output row r's four channels from c in the planes' form: each kernel row's input row (a row
 * in the padding: zx) found in a slot, or copied into one that no other kernel row of this
 * output row needs (at stride 1 the next output row needs two of the three again: a whole
 * tensor copies each input row once); the runs' weights follow the slots' order. Then runs of
 * DW3_RUN outputs, each channel's sums by the family's mt_s8_dw3_channel, requantized as the
 * four-channel form's are. */
static void dw3_row(dw_group *grp, const dw_row *r, const int8_t *w, const mt_spatial *g, uint32_t c, mt_q_params p,
                    int8_t *y)
{
    const uint32_t Wp = g->OW + MT_DW3_PAD_COLS;
    dw3_planes *planes = grp->planes;
    if (!grp->made) {
        mt_s8_dw3_weights_of(grp->k3, w + c, g->C, grp->start, p.x_zp);
        grp->made = 1;
    }
    const int8_t *rows[3] = {NULL, NULL, NULL};
    uint32_t slot = r->rows.first;
    for (uint32_t k = 0; k < r->rows.count; ++k) {
        rows[r->kh0 + k] = r->rows.base + (size_t)slot * r->rows.bytes + c;
        if (++slot == r->rows.ring) slot = 0;
    }
    mt_s8_dw3 run[4];
    /* nothing held (a row a call, or a tensor's first; the first row fills all three): slot k,
     * kernel row k, no search */
    if (!planes->valid[0]) {
        static const uint32_t in_order[3] = {0, 1, 2};
        for (uint32_t k = 0; k < 3; ++k) {
            mt_s8_dw3_slot(rows[k], g->W, g->C, g->PL, Wp, (int8_t)p.x_zp, planes->bytes + 4u * k * Wp);
            planes->holds[k] = rows[k], planes->valid[k] = 1;
        }
        for (uint32_t k = 0; k < 4; ++k) mt_s8_dw3_slots(&run[k], &grp->k3[k], in_order);
    } else {
        uint32_t kernel_row[3]; /* the kernel row each slot holds */
        int used[3] = {0, 0, 0}, found[3] = {0, 0, 0};
        for (uint32_t k = 0; k < 3; ++k)
            for (uint32_t j = 0; j < 3; ++j)
                if (!used[j] && planes->valid[j] && planes->holds[j] == rows[k]) {
                    kernel_row[j] = k, used[j] = found[k] = 1;
                    break;
                }
        for (uint32_t k = 0; k < 3; ++k)
            for (uint32_t j = 0; !found[k] && j < 3; ++j)
                if (!used[j]) {
                    mt_s8_dw3_slot(rows[k], g->W, g->C, g->PL, Wp, (int8_t)p.x_zp, planes->bytes + 4u * j * Wp);
                    planes->holds[j] = rows[k], planes->valid[j] = 1;
                    kernel_row[j] = k, used[j] = found[k] = 1;
                }
        for (uint32_t k = 0; k < 4; ++k) mt_s8_dw3_slots(&run[k], &grp->k3[k], kernel_row);
    }
    int32_t sums[4 * DW3_RUN];
    for (uint32_t ow0 = 0; ow0 < g->OW; ow0 += DW3_RUN) {
        const uint32_t n = g->OW - ow0 < DW3_RUN ? g->OW - ow0 : DW3_RUN;
        for (uint32_t k = 0; k < 4; ++k)
            mt_s8_dw3_channel(&run[k], planes->bytes + k * Wp + ow0, 4u * Wp, n, sums + k);
        mt_s8_requant_block(sums, n, 4, grp->q, p, y + (size_t)ow0 * g->C + c, g->C);
    }
}

#endif /* MT_OPS_PORTABLE_DEPTHWISE_S8_PLANES_H */
