/*
 * A firmware of your own that fine-tunes a model on the device with microtrain.
 *
 * What it links (CMakeLists.txt): microtrain::microtrain_core, the training core
 * (microtrain.h), and microtrain::board, the board support: startup code that enables the
 * FPU, sets up RAM and calls main(); the linker script; a console and an exit (mt_board.h).
 * What it trains on: mt_firmware_data.c/.h, written from your model and dataset by
 *
 *     microtrain firmware --sources-only --model model.mtm --data data.npz --out gen
 *
 * (the model image and the rows as const arrays in flash, the training configuration, and
 * MT_FW_ARENA_BYTES, the arena size the planner computed on the host).
 *
 *   boot    plan the session again on the device and check it needs exactly the arena
 *           this build reserved (a stale data folder would otherwise overrun it)
 *   bind    lay the session out in that static arena: no heap anywhere
 *   train   MT_FW_EPOCHS passes over the rows in batches of B (the last one may be partial)
 *   report  each epoch's mean loss, then the CRC-32 of the weights; main's return value is
 *           the exit status (under QEMU, QEMU's own)
 *
 * Console output; each loss is also printed as its float32 bit pattern, so a run on the
 * host (microtrain.TrainSession, same calls in the same order) can be compared bit for bit:
 *
 *   plan: 5504 arena bytes, as built
 *   epoch 1 loss 0.4321 (0x3edd3c36)
 *   ...
 *   weights crc32 0x1a2b3c4d
 *   done
 *
 * To train on your own samples, fill the input and target buffers from your sensor where
 * load_rows() copies dataset rows; keep the rest.
 */
#include <stdint.h>
#include <string.h>

#include "microtrain.h"
#include "mt_board.h"
#include "mt_firmware_data.h"

/* Exit statuses: 0 trained, 1 a microtrain call failed, 2 the plan disagrees with the build. */
enum { EXIT_CORE_ERROR = 1, EXIT_PLAN_MISMATCH = 2 };

/* Everything the session holds (trained weights, gradients, optimizer state, activations,
   the input and target batch): the planner's figure, exactly. */
static uint8_t arena[MT_FW_ARENA_BYTES] __attribute__((aligned(MT_ARENA_ALIGN)));

/* ---- console output without printf: text, decimal, hex */

static void put(const char *text)
{
    while (*text)
        mt_board_putc(*text++);
}

static void put_u32(uint32_t value)
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

static void put_hex(uint32_t value)
{
    put("0x");
    for (int shift = 28; shift >= 0; shift -= 4)
        mt_board_putc("0123456789abcdef"[(value >> shift) & 0xFu]);
}

/* "0.4321 (0x3edd3c36)": four decimals for people, the exact bits for a comparison. */
static void put_loss(float loss)
{
    uint32_t bits;
    memcpy(&bits, &loss, sizeof bits);
    if (loss >= 0.f && loss < 100000.f) {
        uint32_t scaled = (uint32_t)(loss * 10000.f + 0.5f);
        put_u32(scaled / 10000u);
        mt_board_putc('.');
        for (uint32_t unit = 1000u; unit; unit /= 10u)
            mt_board_putc((char)('0' + scaled / unit % 10u));
        put(" ");
    }
    put("(");
    put_hex(bits);
    put(")");
}

/* Any error status: say which call failed and why, and stop. */
static void check(mt_status status, const char *call)
{
    if (status == MT_OK)
        return;
    put("error: ");
    put(call);
    put(": ");
    put(mt_status_str(status));
    put("\n");
    mt_board_exit(EXIT_CORE_ERROR);
}

/* Copy rows [first, first + n) of the training set into the session's input and target. */
static void load_rows(float *input, void *target, int32_t first, int32_t n)
{
    /* rows lie back to back, MT_FW_INPUT_ROW_BYTES each (float32, or int8 of any length) */
    memcpy(input, (const uint8_t *)mt_fw_train_x + (size_t)first * MT_FW_INPUT_ROW_BYTES,
           (size_t)n * MT_FW_INPUT_ROW_BYTES);
    memcpy(target, &mt_fw_train_y[(size_t)first * MT_FW_TARGET_WORDS],
           (size_t)n * MT_FW_TARGET_WORDS * sizeof(uint32_t));
}

/* CRC-32 (zlib's) over every weight tensor in mt_session_param() order: the values the arena
   holds (info.held: all of a trained weight, the first rows of a layer a sparse update trains
   the first channels of, none of a frozen one), then the image's. The host computes the same
   over get_weights(), and mt_session_weights_crc32() the same in the core. */
static uint32_t weights_crc32(mt_session *s)
{
    int32_t count;
    uint32_t crc = 0u;
    check(mt_session_param_count(s, &count), "mt_session_param_count");
    for (int32_t position = 0; position < count; position++) {
        mt_param_info info;
        check(mt_session_param(s, position, &info), "mt_session_param");
        crc = mt_crc32_update(crc, info.data, (size_t)info.held * sizeof(float));
        crc = mt_crc32_update(crc, info.image_data + info.held, (size_t)(info.count - info.held) * sizeof(float));
    }
    return crc;
}

int main(void)
{
    mt_train_config cfg;
    mt_fw_train_config(&cfg); /* optimizer, loss, batch size, trained ops: as generated */

    mt_memory_plan plan; /* the image validated once, here; the plan remembers it */
    check(mt_plan(mt_fw_model, MT_FW_MODEL_BYTES, &cfg, &plan), "mt_plan");
    if (plan.total_bytes != sizeof arena) {
        put("error: mt_plan() asks for ");
        put_u32((uint32_t)plan.total_bytes);
        put(" arena bytes, this build has ");
        put_u32((uint32_t)sizeof arena);
        put(": generate the data again and rebuild\n");
        return EXIT_PLAN_MISMATCH;
    }
    put("plan: ");
    put_u32((uint32_t)plan.total_bytes);
    put(" arena bytes, as built\n");

    mt_session *s; /* laid out from the plan: the image is not validated or sized again */
    check(mt_session_init_from_plan(&s, &plan, &cfg, arena, sizeof arena), "mt_session_init_from_plan");
    float *input; /* [B, MT_FW_INPUT_ELEMENTS] inside the arena */
    void *target; /* [B, MT_FW_TARGET_WORDS]: float32 targets or int32 labels */
    int32_t input_count, target_bytes;
    check(mt_session_input(s, 0, &input, &input_count), "mt_session_input");
    check(mt_session_target(s, &target, &target_bytes), "mt_session_target");

    const int32_t rows = MT_FW_TRAIN_ROWS, batch = cfg.batch_size;
    for (int32_t epoch = 1; epoch <= MT_FW_EPOCHS; epoch++) {
        float loss_sum = 0.f; /* float32, in this order: what the host replays */
        for (int32_t first = 0; first < rows; first += batch) {
            int32_t n = rows - first < batch ? rows - first : batch;
            float loss; /* mean over the n rows */
            load_rows(input, target, first, n);
            check(mt_session_train_step(s, n, &loss), "mt_session_train_step");
            loss_sum += loss * (float)n;
        }
        check(mt_session_set_epoch(s, epoch), "mt_session_set_epoch"); /* for checkpoints */
        put("epoch ");
        put_u32((uint32_t)epoch);
        put(" loss ");
        put_loss(loss_sum / (float)rows);
        put("\n");
    }

    put("weights crc32 ");
    put_hex(weights_crc32(s));
    put("\ndone\n");
    return 0;
}
