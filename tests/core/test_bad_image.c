/*
 * Everything that comes from outside is checked and answered with a status, never a crash
 * (bad_input_util.h; the whole-API matrix with guard bytes: test_api_model.c and its siblings).
 *
 * This program: corrupt model images (every truncation, header damage, and, with the CRC
 * recomputed so the structural checks are reached, each table rule of docs/model_format.md,
 * the shapes each op's check refuses among them), misaligned images, and the model-image
 * queries. Run under ASan/UBSan too: truncated images are copied into buffers of exactly the
 * truncated length so an over-read is caught.
 */
#include "bad_input_util.h"

static void swap_ops(uint8_t *img, size_t a, size_t b)
{
    uint8_t tmp[32];
    memcpy(tmp, img + a, 32);
    memcpy(img + a, img + b, 32);
    memcpy(img + b, tmp, 32);
    ib_refresh_crc(img);
}

/* Every entry point that validates an image must give the same answer for it. */
static void expect_image(const char *what, const uint8_t *img, size_t bytes, mt_status want)
{
    mt_train_config cfg;
    mt_memory_plan plan;
    mt_tensor_info ti;
    mt_session *s = NULL;
    int32_t index;
    default_cfg(&cfg);
    if (!CHECK_STATUS(mt_model_check(img, bytes, NULL), want))
        printf("    image: %s\n", what);
    CHECK_STATUS(mt_plan(img, bytes, &cfg, &plan), want);
    CHECK_STATUS(mt_model_tensor(img, bytes, 0, &ti), want);
    CHECK_STATUS(mt_model_io(img, bytes, 0, 0, &index), want);
    CHECK_STATUS(mt_session_init(&s, img, bytes, &cfg, arena_storage, sizeof arena_storage), want);
}

/* Patch helpers: refresh the CRC afterwards so the check under test is the one that fires. */
#define PATCH32(off, v) (ib_put_u32(img, (off), (v)), ib_refresh_crc(img))
#define PATCH16(off, v) (ib_put_u16(img, (off), (v)), ib_refresh_crc(img))
#define PATCH8(off, v) (img[(off)] = (uint8_t)(v), ib_refresh_crc(img))
#define CASE(what, patch, want)                                                              \
    do {                                                                                     \
        size_t bytes_;                                                                       \
        uint8_t *img = fresh(&bytes_);                                                       \
        patch;                                                                               \
        expect_image(what, img, bytes_, want);                                               \
        free(img);                                                                           \
    } while (0)

/* The model-image queries: NULLs, indices, and what a valid image reports. */
static void test_model_queries(void)
{
    size_t bytes;
    uint8_t *img = fresh(&bytes);
    mt_model_info info;
    mt_tensor_info ti;
    int32_t index = -7;
    mt_train_config_init(NULL); /* documented as a plain initializer: NULL is ignored */
    CHECK_STATUS(mt_model_check(NULL, bytes, &info), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_check(img, bytes, NULL), MT_OK);
    CHECK_STATUS(mt_model_check(img, bytes, &info), MT_OK);
    CHECK_EQ_INT(info.version, 2);
    CHECK_EQ_INT(info.num_tensors, 8);
    CHECK_EQ_INT(info.num_ops, 3);
    CHECK_EQ_INT(info.num_inputs, 1);
    CHECK_EQ_INT(info.num_outputs, 1);
    CHECK_EQ_INT(info.num_params, 4);
    CHECK_EQ_INT(info.param_count, 26);
    CHECK_EQ_INT(info.crc32, ib_get_u32(img, 12));
    uint8_t *padded = calloc(1, bytes + 13); /* the buffer may be longer than image_bytes */
    memcpy(padded, img, bytes);
    CHECK_STATUS(mt_model_check(padded, bytes + 13, NULL), MT_OK);
    free(padded);

    CHECK_STATUS(mt_model_tensor(NULL, bytes, 0, &ti), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_tensor(img, bytes, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_tensor(img, bytes, -1, &ti), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_tensor(img, bytes, 8, &ti), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_tensor(img, bytes, 1, &ti), MT_OK); /* W1 [4, 3] */
    CHECK(ti.index == 1 && ti.dtype == MT_DTYPE_F32 && ti.ndim == 2 && ti.dims[0] == 4 &&
          ti.dims[1] == 3 && ti.count == 12 && ti.producer == -1 &&
          ti.flags == (MT_TENSOR_CONST | MT_TENSOR_TRAINABLE));
    CHECK_STATUS(mt_model_tensor(img, bytes, 4, &ti), MT_OK); /* a = relu(h), one sample */
    CHECK(ti.ndim == 1 && ti.dims[0] == 4 && ti.count == 4 && ti.producer == 1);
    CHECK_STATUS(mt_model_tensor(img, bytes, 0, &ti), MT_OK);
    CHECK(ti.flags == MT_TENSOR_INPUT && ti.producer == -1);

    CHECK_STATUS(mt_model_io(NULL, bytes, 0, 0, &index), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_io(img, bytes, 0, 0, NULL), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_io(img, bytes, 0, 1, &index), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_io(img, bytes, 1, -1, &index), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_io(img, bytes, 2, 0, &index), MT_ERR_BAD_ARGUMENT);
    CHECK_STATUS(mt_model_io(img, bytes, 0, 0, &index), MT_OK);
    CHECK_EQ_INT(index, 0);
    CHECK_STATUS(mt_model_io(img, bytes, 1, 0, &index), MT_OK);
    CHECK_EQ_INT(index, 7);

    /* a 4-byte-misaligned image is refused before it is read */
    uint8_t *shifted = malloc(bytes + 2);
    memcpy(shifted + 2, img, bytes);
    expect_image("misaligned by 2", shifted + 2, bytes, MT_ERR_BAD_ARGUMENT);
    free(shifted);
    free(img);
}

/* Every prefix of a valid image is refused, read from a buffer of exactly that length. */
static void test_truncations(void)
{
    size_t bytes;
    uint8_t *img = fresh(&bytes);
    int bad = 0;
    for (size_t len = 0; len < bytes; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        memcpy(cut, img, len);
        mt_status st = mt_model_check(cut, len, NULL);
        /* len 0 may be called a bad argument; any other prefix is a truncated model */
        if (!(st == MT_ERR_BAD_MODEL || (len == 0 && st == MT_ERR_BAD_ARGUMENT))) {
            if (bad++ < 5)
                printf("    truncated to %zu of %zu bytes: status %d\n", len, bytes, (int)st);
        }
        mt_memory_plan plan;
        mt_train_config cfg;
        default_cfg(&cfg);
        CHECK(mt_plan(cut, len, &cfg, &plan) == st);
        free(cut);
    }
    CHECK_EQ_INT(bad, 0);
    free(img);
}

static void test_header_damage(void)
{
    size_t n;
    uint8_t *probe = fresh(&n);
    const uint32_t size = (uint32_t)n;
    const uint32_t data_off = ib_get_u32(probe, 44), data_bytes = ib_get_u32(probe, 48);
    free(probe);

    /* magic, version, header size: outside the CRC, each checked on its own */
    for (int k = 0; k < 4; k++)
        CASE("magic byte", img[k] ^= 0x20, MT_ERR_BAD_MODEL);
    CASE("version 4", ib_put_u16(img, 4, 4), MT_ERR_UNSUPPORTED);
    CASE("version 0", ib_put_u16(img, 4, 0), MT_ERR_UNSUPPORTED);
    CASE("version 0xFFFF", ib_put_u16(img, 4, 0xFFFF), MT_ERR_UNSUPPORTED);
    CASE("header_bytes 32", ib_put_u16(img, 6, 32), MT_ERR_BAD_MODEL);
    CASE("image_bytes > buffer", ib_put_u32(img, 8, size + 4), MT_ERR_BAD_MODEL);
    CASE("image_bytes 0xFFFFFFFF", ib_put_u32(img, 8, 0xFFFFFFFFu), MT_ERR_BAD_MODEL);
    CASE("image_bytes 40", ib_put_u32(img, 8, 40), MT_ERR_BAD_MODEL);

    /* CRC mismatch: one flipped bit anywhere in [16, image_bytes), or in the CRC itself */
    CASE("crc field", img[12] ^= 1, MT_ERR_BAD_MODEL);
    CASE("bit in counts", img[16] ^= 4, MT_ERR_BAD_MODEL);
    CASE("bit in tensor table", img[64 + 5] ^= 1, MT_ERR_BAD_MODEL);
    CASE("bit in data", img[data_off + 3] ^= 0x80, MT_ERR_BAD_MODEL);
    CASE("last byte", img[size - 1] ^= 1, MT_ERR_BAD_MODEL);

    /* counts, with the CRC recomputed */
    CASE("num_tensors 0", PATCH32(16, 0), MT_ERR_BAD_MODEL);
    CASE("num_tensors > max", PATCH32(16, MT_MAX_TENSORS + 1), MT_ERR_BAD_MODEL);
    CASE("num_tensors * 32 wraps", PATCH32(16, 0x08000001u), MT_ERR_BAD_MODEL);
    CASE("num_ops 0", PATCH32(20, 0), MT_ERR_BAD_MODEL);
    CASE("num_ops > max", PATCH32(20, MT_MAX_OPS + 1), MT_ERR_BAD_MODEL);
    CASE("num_ops past the image", PATCH32(20, MT_MAX_OPS), MT_ERR_BAD_MODEL);
    CASE("num_inputs 0", PATCH32(24, 0), MT_ERR_BAD_MODEL);
    CASE("num_outputs 0", PATCH32(28, 0), MT_ERR_BAD_MODEL);
    CASE("num_inputs huge", PATCH32(24, 0x7FFFFFFFu), MT_ERR_BAD_MODEL);
    CASE("num_outputs huge", PATCH32(28, 0xFFFFFFFFu), MT_ERR_BAD_MODEL);

    /* table offsets: in the header, past the end, misaligned, wrapping around 2^32 */
    static const size_t fields[] = { 32, 36, 40 };
    for (int f = 0; f < 3; f++) {
        CASE("table in header", PATCH32(fields[f], 0), MT_ERR_BAD_MODEL);
        CASE("table at end", PATCH32(fields[f], size), MT_ERR_BAD_MODEL);
        CASE("table wraps", PATCH32(fields[f], 0xFFFFFFE0u), MT_ERR_BAD_MODEL);
    }
    CASE("tensor table misaligned", PATCH32(32, 66), MT_ERR_BAD_MODEL);
    CASE("op table misaligned", PATCH32(36, ib_get_u32(img, 36) + 2), MT_ERR_BAD_MODEL);
    CASE("io table half out", PATCH32(40, size - 2), MT_ERR_BAD_MODEL);
    CASE("data misaligned", PATCH32(44, data_off + 4), MT_ERR_BAD_MODEL);
    CASE("data past end", PATCH32(48, data_bytes + 16), MT_ERR_BAD_MODEL);
    CASE("data wraps", PATCH32(44, 0xFFFFFFF0u), MT_ERR_BAD_MODEL);
    CASE("data section in header", PATCH32(44, 16), MT_ERR_BAD_MODEL);
    /* a shorter image_bytes, CRC over the shorter range: the data section now sticks out */
    CASE("image_bytes cuts data", (ib_put_u32(img, 8, size - 16), ib_refresh_crc(img)),
         MT_ERR_BAD_MODEL);
}

static void test_table_rules(void)
{
    size_t n;
    uint8_t *probe = fresh(&n);
    const size_t t1 = ib_tensor_entry(probe, 1), t3 = ib_tensor_entry(probe, 3);
    const size_t t4 = ib_tensor_entry(probe, 4), t0 = ib_tensor_entry(probe, 0);
    const size_t o0 = ib_op_entry(probe, 0), o1 = ib_op_entry(probe, 1), o2 = ib_op_entry(probe, 2);
    const size_t io = ib_get_u32(probe, 40);
    const uint32_t data_bytes = ib_get_u32(probe, 48);
    free(probe);

    /* tensor indices past the table */
    CASE("op input index = num_tensors", PATCH16(o1 + 4, 8), MT_ERR_BAD_MODEL);
    CASE("op output index 0xFFFE", PATCH16(o0 + 12, 0xFFFE), MT_ERR_BAD_MODEL);
    CASE("op output absent", PATCH16(o0 + 12, 0xFFFF), MT_ERR_BAD_MODEL);
    CASE("input index = num_tensors", PATCH16(io, 8), MT_ERR_BAD_MODEL);
    CASE("output index 0xFFFF", PATCH16(io + 2, 0xFFFF), MT_ERR_BAD_MODEL);

    /* tensor entries: dims, ndim, dtype, flags, data placement */
    CASE("dim 0", PATCH32(t3 + 4, 0), MT_ERR_BAD_MODEL);
    CASE("dim 0 of a constant", PATCH32(t1 + 8, 0), MT_ERR_BAD_MODEL);
    CASE("ndim 0", PATCH8(t3 + 1, 0), MT_ERR_BAD_MODEL);
    CASE("ndim 5", PATCH8(t3 + 1, 5), MT_ERR_BAD_MODEL);
    CASE("dims past ndim not 0", PATCH32(t3 + 8, 7), MT_ERR_BAD_MODEL);
    CASE("dims product overflows", (ib_put_u32(img, t3 + 4, 0x10000), img[t3 + 1] = 2,
                                    PATCH32(t3 + 8, 0x10001)), MT_ERR_BAD_MODEL);
    CASE("dtype 0", PATCH8(t3, 0), MT_ERR_BAD_MODEL);
    CASE("TRAINABLE without CONST", PATCH16(t3 + 2, MT_TENSOR_TRAINABLE), MT_ERR_BAD_MODEL);
    CASE("CONST INPUT", PATCH16(t1 + 2, MT_TENSOR_CONST | MT_TENSOR_INPUT), MT_ERR_BAD_MODEL);
    CASE("const data past section", PATCH32(t1 + 20, data_bytes), MT_ERR_BAD_MODEL);
    CASE("const data offset not 16-aligned", PATCH32(t1 + 20, 4), MT_ERR_BAD_MODEL);
    CASE("const data offset wraps", PATCH32(t1 + 20, 0xFFFFFFF0u), MT_ERR_BAD_MODEL);
    CASE("data_bytes short of shape", PATCH32(t1 + 24, 44), MT_ERR_BAD_MODEL);
    CASE("data_bytes past shape", PATCH32(t1 + 24, 52), MT_ERR_BAD_MODEL);
    CASE("activation with data", PATCH32(t3 + 24, 16), MT_ERR_BAD_MODEL);

    /* op order and single writers */
    /* relu(h) first: it reads h before dense writes it */
    CASE("op reads a tensor not yet produced", swap_ops(img, o0, o1), MT_ERR_BAD_MODEL);
    CASE("op reads its own output", PATCH16(o1 + 4, 4), MT_ERR_BAD_MODEL);
    CASE("op writes a constant", PATCH16(o1 + 12, 2), MT_ERR_BAD_MODEL); /* b1, also [4] */
    square_model = 1;
    CASE("op writes the input", PATCH16(o1 + 12, 0), MT_ERR_BAD_MODEL); /* x, also [4] */
    square_model = 0;
    CASE("output io names a constant", PATCH16(io + 2, 6), MT_ERR_BAD_MODEL);
    CASE("5 op inputs", PATCH8(o1 + 1, 5), MT_ERR_BAD_MODEL);
    CASE("3 op outputs", PATCH8(o1 + 2, 3), MT_ERR_BAD_MODEL);
    CASE("input io names a constant", PATCH16(io, 1), MT_ERR_BAD_MODEL);

    /* shapes that do not fit the op */
    CASE("dense W [3, 4] for x[3], y[4]",
         (ib_put_u32(img, t1 + 4, 3), PATCH32(t1 + 8, 4)), MT_ERR_SHAPE);
    CASE("dense W [6, 2]", (ib_put_u32(img, t1 + 4, 6), PATCH32(t1 + 8, 2)), MT_ERR_SHAPE);
    CASE("relu output count 5", PATCH32(t4 + 4, 5), MT_ERR_SHAPE);
    CASE("dense output i32", PATCH8(t3, MT_DTYPE_I32), MT_ERR_SHAPE);
    /* model inputs and outputs are float buffers in the API: an i32 one is a bad model */
    CASE("model input i32", PATCH8(t0, MT_DTYPE_I32), MT_ERR_BAD_MODEL);

    /* op entry byte 3: the layer in version 2 (never lower than the op before's; numbers may
     * be skipped by layers without ops), reserved in version 1 */
    CASE("layers 0, 1, 1", PATCH8(o1 + 3, 1), MT_OK);
    CASE("first op in layer 1", PATCH8(o0 + 3, 1), MT_ERR_BAD_MODEL);
    CASE("layer 0 then 2 (a layer without ops between)", PATCH8(o2 + 3, 2), MT_OK);
    CASE("layer 255 after 0", PATCH8(o2 + 3, 255), MT_OK);
    CASE("layers 0, 1, 0", (img[o1 + 3] = 1, PATCH8(o2 + 3, 0)), MT_ERR_BAD_MODEL);
    CASE("layers 2, 1, 1", (img[o0 + 3] = 2, PATCH8(o1 + 3, 1)), MT_ERR_BAD_MODEL);
    CASE("layers 0, 0, 0", PATCH8(o2 + 3, 0), MT_OK);
    CASE("version 1 with the layer bytes of version 2", PATCH16(4, 1), MT_ERR_BAD_MODEL);
    CASE("version 1, byte 3 all zero", (img[o2 + 3] = 0, PATCH16(4, 1)), MT_OK);

    /* op types this build does not know */
    CASE("op type 20 (unknown)", PATCH8(o1, 20), MT_ERR_UNSUPPORTED);
    CASE("op type 200", PATCH8(o1, 200), MT_ERR_UNSUPPORTED);
}

/* Two ops writing one tensor: x -> relu -> a, x -> relu -> a, a -> dense -> y. */
static void test_written_twice(void)
{
    static ib_model m;
    const float w[6] = { 0 };
    int32_t d3[1] = { 3 }, d2[1] = { 2 }, dw[2] = { 2, 3 };
    int in[2], out[1];
    size_t bytes;
    ib_init(&m);
    int x = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_INPUT, 1, d3, NULL);
    int a = ib_tensor(&m, MT_DTYPE_F32, 0, 1, d3, NULL);
    int W = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_CONST, 2, dw, w);
    int y = ib_tensor(&m, MT_DTYPE_F32, MT_TENSOR_OUTPUT, 1, d2, NULL);
    in[0] = x, out[0] = a;
    ib_op(&m, MT_OP_RELU, 1, in, 1, out);
    ib_op(&m, MT_OP_RELU, 1, in, 1, out);
    in[0] = a, in[1] = W, out[0] = y;
    ib_op(&m, MT_OP_DENSE, 2, in, 1, out);
    ib_input(&m, x);
    ib_output(&m, y);
    uint8_t *img = ib_build(&m, &bytes);
    expect_image("tensor written twice", img, bytes, MT_ERR_BAD_MODEL);
    free(img);
    m.num_ops = 0; /* control: the same model with one writer is valid */
    in[0] = x, out[0] = a;
    ib_op(&m, MT_OP_RELU, 1, in, 1, out);
    in[0] = a, in[1] = W, out[0] = y;
    ib_op(&m, MT_OP_DENSE, 2, in, 1, out);
    img = ib_build(&m, &bytes);
    expect_image("one writer", img, bytes, MT_OK);
    free(img);
}

int main(void)
{
    test_model_queries();
    test_truncations();
    test_header_damage();
    test_table_rules();
    test_written_twice();
    return MT_TEST_END();
}
