/*
 * Conv2D (ops/conv2d.c) against a double reference and central finite differences
 * (conv_gradcheck_util.h's cases), and mt_spatial_axis's TFLite output sizes and pad-before
 * values, which every spatial op uses. Its siblings: the kernel table's cases
 * (boards/app/siblings_spatial.c, run by tests/core/test_kernel_siblings.c).
 */
#include "conv_gradcheck_util.h"

/* ---- geometry ------------------------------------------------------------------------------- */

static void test_spatial_axis_table(void)
{
    static const struct { uint32_t in, k, s, pad; int status; uint32_t out, before; } cases[] = {
        { 5, 3, 1, MT_PADDING_VALID, MT_OK, 3, 0 },  { 5, 3, 2, MT_PADDING_VALID, MT_OK, 2, 0 },
        { 6, 3, 2, MT_PADDING_VALID, MT_OK, 2, 0 },  { 7, 2, 3, MT_PADDING_VALID, MT_OK, 2, 0 },
        { 3, 3, 1, MT_PADDING_VALID, MT_OK, 1, 0 },  { 8, 1, 3, MT_PADDING_VALID, MT_OK, 3, 0 },
        { 5, 2, 2, MT_PADDING_SAME, MT_OK, 3, 0 },   /* P = 1: nothing before, one after */
        { 6, 3, 2, MT_PADDING_SAME, MT_OK, 3, 0 },   /* P = 1: asymmetric as in TFLite */
        { 5, 3, 1, MT_PADDING_SAME, MT_OK, 5, 1 },   { 5, 3, 2, MT_PADDING_SAME, MT_OK, 3, 1 },
        { 4, 4, 1, MT_PADDING_SAME, MT_OK, 4, 1 },   /* P = 3: one before, two after */
        { 7, 3, 3, MT_PADDING_SAME, MT_OK, 3, 1 },   { 8, 2, 2, MT_PADDING_SAME, MT_OK, 4, 0 },
        { 3, 1, 2, MT_PADDING_SAME, MT_OK, 2, 0 },   { 1, 3, 1, MT_PADDING_SAME, MT_OK, 1, 1 },
        { 2, 5, 1, MT_PADDING_SAME, MT_OK, 2, 2 },   /* K > I is fine under SAME */
        /* invalid: K > I under VALID, an empty window, stride 0, an unknown padding */
        { 2, 3, 1, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 }, { 1, 2, 1, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 },
        { 5, 0, 1, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 }, { 5, 0, 1, MT_PADDING_SAME, MT_ERR_SHAPE, 0, 0 },
        { 5, 3, 0, MT_PADDING_VALID, MT_ERR_SHAPE, 0, 0 }, { 5, 3, 0, MT_PADDING_SAME, MT_ERR_SHAPE, 0, 0 },
        { 5, 3, 1, 2, MT_ERR_BAD_MODEL, 0, 0 },            { 5, 3, 2, 7, MT_ERR_BAD_MODEL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t out = 12345, before = 12345;
        mt_status st = mt_spatial_axis(cases[i].in, cases[i].k, cases[i].s, cases[i].pad, &out, &before);
        if (!CHECK_STATUS(st, cases[i].status))
            printf("    case %u (in %u, k %u, s %u, pad %u)\n", (unsigned)i, cases[i].in, cases[i].k,
                   cases[i].s, cases[i].pad);
        if (cases[i].status == MT_OK && (!CHECK_EQ_INT(out, cases[i].out) || !CHECK_EQ_INT(before, cases[i].before)))
            printf("    case %u\n", (unsigned)i);
    }
    /* a sweep against the formula, with the window count never empty */
    for (int in = 1; in <= 9; in++)
        for (int k = 1; k <= 5; k++)
            for (int s = 1; s <= 3; s++)
                for (int same = 0; same <= 1; same++) {
                    uint32_t out, before;
                    int eo, eb;
                    mt_status st = mt_spatial_axis((uint32_t)in, (uint32_t)k, (uint32_t)s, (uint32_t)same, &out, &before);
                    if (!same && k > in) {
                        CHECK_STATUS(st, MT_ERR_SHAPE);
                        continue;
                    }
                    ref_axis(in, k, s, same, &eo, &eb);
                    if (!CHECK_STATUS(st, MT_OK) || !CHECK_EQ_INT(out, eo) || !CHECK_EQ_INT(before, eb))
                        printf("    in %d k %d s %d same %d\n", in, k, s, same);
                    CHECK((int)before < k); /* the first window reaches the input */
                    CHECK((int64_t)(out - 1) * s - (int64_t)before < in); /* and the last one */
                }
}

int main(void)
{
    mt_test_seed(20240611u);
    test_spatial_axis_table();
    check_convolutions(0);
    return MT_TEST_END();
}
