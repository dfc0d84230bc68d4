/* Shared pieces of the example firmware and the benchmark; see fw_app.h. */
#include "fw_app.h"

#include <string.h>

#include "microtrain.h" /* mt_crc32_update: the CRC the host tools use */
#include "mt_board.h"

/* The arena: exactly the planner's figure, computed on the host at generation time. */
static uint8_t arena[MT_FW_ARENA_BYTES] __attribute__((aligned(MT_ARENA_ALIGN)));

void mt_fw_puts(const char *text)
{
    while (*text)
        mt_board_putc(*text++);
}

void mt_fw_put_u32(uint32_t value)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value);
    while (n)
        mt_board_putc(digits[--n]);
}

void mt_fw_put_hex32(uint32_t value)
{
    static const char hex[] = "0123456789abcdef";
    mt_fw_puts("0x");
    for (int shift = 28; shift >= 0; shift -= 4)
        mt_board_putc(hex[(value >> shift) & 0xFu]);
}

void mt_fw_put_float(float value)
{
    if (value != value) {
        mt_fw_puts("nan");
        return;
    }
    if (value < 0.f) {
        mt_board_putc('-');
        value = -value;
    }
    if (value >= 4.0e9f) { /* beyond uint32_t: only the bits say more */
        mt_fw_puts("huge");
        return;
    }
    uint32_t whole = (uint32_t)value;
    uint32_t frac = (uint32_t)((value - (float)whole) * 10000.f + 0.5f);
    if (frac >= 10000u) {
        whole++;
        frac -= 10000u;
    }
    mt_fw_put_u32(whole);
    mt_board_putc('.');
    for (uint32_t unit = 1000u; unit; unit /= 10u)
        mt_board_putc((char)('0' + frac / unit % 10u));
}

uint32_t mt_fw_float_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

void mt_fw_check(mt_status status, const char *call)
{
    if (status == MT_OK)
        return;
    mt_fw_puts("error: ");
    mt_fw_puts(call);
    mt_fw_puts(": ");
    mt_fw_puts(mt_status_str(status));
    mt_fw_puts("\n");
    mt_board_exit(MT_FW_EXIT_CORE_ERROR);
}

/* The build's arena figure disagrees with the device's plan: say both and stop */
static void plan_mismatch(size_t planned)
{
    mt_fw_puts("error: mt_plan() asks for ");
    mt_fw_put_u32((uint32_t)planned);
    mt_fw_puts(" arena bytes on this device, the build declared ");
    mt_fw_put_u32((uint32_t)MT_FW_ARENA_BYTES);
    mt_fw_puts(" (regenerate the firmware data)\n");
    mt_board_exit(MT_FW_EXIT_PLAN_MISMATCH);
}

/* mt_session_init() validates the image once (its CRC over every byte, the tables, each op's
 * checks), plans it and lays the session out in one call; its plan is then the device's
 * figure, so the image is read once at boot (mt_plan() and init from its plan would plan a
 * second time; mt_plan() and the old init read a 642 KB MobileNetV2 image three times). Only
 * when init refuses is mt_plan() asked, so that the failure is reported as before: mt_plan's
 * own error, a plan that disagrees with the build, or else init's error. */
mt_session *mt_fw_open_session(mt_train_config *cfg)
{
    mt_fw_train_config(cfg);
    mt_session *s;
    mt_memory_plan plan;
    const mt_status st = mt_session_init(&s, mt_fw_model, MT_FW_MODEL_BYTES, cfg, arena, sizeof arena);
    if (st != MT_OK) {
        mt_fw_check(mt_plan(mt_fw_model, MT_FW_MODEL_BYTES, cfg, &plan), "mt_plan");
        if (plan.total_bytes != MT_FW_ARENA_BYTES) plan_mismatch(plan.total_bytes);
        mt_fw_check(st, "mt_session_init");
    }
    mt_fw_check(mt_session_plan(s, &plan), "mt_session_plan");
    if (plan.total_bytes != MT_FW_ARENA_BYTES) plan_mismatch(plan.total_bytes);
    return s;
}

void mt_fw_load_rows(mt_session *s, const uint32_t *x, const uint32_t *y, int32_t first,
                     int32_t n)
{
    float *input;
    void *target;
    int32_t count, bytes;
    mt_fw_check(mt_session_input(s, 0, &input, &count), "mt_session_input");
    mt_fw_check(mt_session_target(s, &target, &bytes), "mt_session_target");
    /* rows lie back to back at MT_FW_INPUT_ROW_BYTES (an int8 row may be any length) */
    memcpy(input, (const uint8_t *)x + (size_t)first * MT_FW_INPUT_ROW_BYTES, (size_t)n * MT_FW_INPUT_ROW_BYTES);
    memcpy(target, y + (size_t)first * MT_FW_TARGET_WORDS,
           (size_t)n * MT_FW_TARGET_WORDS * sizeof(uint32_t));
}

uint32_t mt_fw_weights_crc32(mt_session *s)
{
    uint32_t crc = 0u;
    mt_fw_check(mt_session_weights_crc32(s, &crc), "mt_session_weights_crc32");
    return crc;
}

/* Index of the largest of count floats; the first one on ties (as numpy.argmax). */
static int32_t argmax(const float *values, int32_t count)
{
    int32_t best = 0;
    for (int32_t i = 1; i < count; i++)
        if (values[i] > values[best])
            best = i;
    return best;
}

static float word_to_float(uint32_t word)
{
    float value;
    memcpy(&value, &word, sizeof value);
    return value;
}

uint32_t mt_fw_count_correct(mt_session *s, const uint32_t *y, int32_t first, int32_t n)
{
    const float *output;
    int32_t count;
    uint32_t correct = 0u;
    mt_fw_check(mt_session_output(s, 0, &output, &count), "mt_session_output");
    for (int32_t row = 0; row < n; row++) {
        const float *predicted = output + (size_t)row * MT_FW_OUTPUT_ELEMENTS;
        const uint32_t *target = y + (size_t)(first + row) * MT_FW_TARGET_WORDS;
        if (MT_FW_ACCURACY == MT_FW_ACCURACY_ARGMAX_ONE_HOT) {
            float expected[MT_FW_TARGET_WORDS];
            for (int32_t i = 0; i < MT_FW_TARGET_WORDS; i++)
                expected[i] = word_to_float(target[i]);
            correct += argmax(predicted, MT_FW_OUTPUT_ELEMENTS) ==
                       argmax(expected, MT_FW_TARGET_WORDS);
        } else if (MT_FW_ACCURACY == MT_FW_ACCURACY_ARGMAX_LABEL) {
            correct += (uint32_t)argmax(predicted, MT_FW_OUTPUT_ELEMENTS) == target[0];
        } else if (MT_FW_ACCURACY == MT_FW_ACCURACY_BINARY) {
            for (int32_t i = 0; i < MT_FW_OUTPUT_ELEMENTS; i++)
                correct += (predicted[i] > 0.5f) == (word_to_float(target[i]) > 0.5f);
        }
    }
    return correct;
}

uint32_t mt_fw_accuracy_total(int32_t rows)
{
    if (MT_FW_ACCURACY == MT_FW_ACCURACY_BINARY)
        return (uint32_t)rows * MT_FW_OUTPUT_ELEMENTS;
    return MT_FW_ACCURACY == MT_FW_ACCURACY_NONE ? 0u : (uint32_t)rows;
}
