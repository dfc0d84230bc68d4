/*
 * fw_app.h: the pieces the example firmware (firmware.c) and the cost benchmark (bench.c)
 * share: console output without printf, opening the session in the static arena with the
 * build-time plan checked, loading dataset rows into the arena, and the weight CRC.
 *
 * The data and the training configuration come from mt_firmware_data.h/.c, which
 * `microtrain firmware` generates from a .mtm model image and a .npz dataset
 * (py_facade/microtrain/tools/firmware.py documents the format). Rows are stored as the bit
 * patterns of little-endian float32 (int32 for sparse labels), so the firmware trains on
 * exactly the bytes the host trains on.
 */
#ifndef MT_FW_APP_H
#define MT_FW_APP_H

#include <stddef.h>
#include <stdint.h>

#include "microtrain.h"

/* How a firmware scores predictions (MT_FW_ACCURACY in mt_firmware_data.h). */
#define MT_FW_ACCURACY_NONE 0           /* no accuracy is printed (regression) */
#define MT_FW_ACCURACY_ARGMAX_ONE_HOT 1 /* argmax(output) == argmax(one-hot target) */
#define MT_FW_ACCURACY_ARGMAX_LABEL 2   /* argmax(output) == int32 label */
#define MT_FW_ACCURACY_BINARY 3         /* per element: (output > 0.5) == (target > 0.5) */

/* Exit statuses of the firmware (QEMU's exit code under semihosting). */
#define MT_FW_EXIT_OK 0
#define MT_FW_EXIT_CORE_ERROR 1    /* a microtrain call returned an error status */
#define MT_FW_EXIT_PLAN_MISMATCH 2 /* mt_plan() on the device disagrees with the build */

#include "mt_firmware_data.h"

/** @brief Write a NUL-terminated string to the board console. */
void mt_fw_puts(const char *text);
/** @brief Write @p value in decimal. */
void mt_fw_put_u32(uint32_t value);
/** @brief Write @p value as 0x followed by 8 lowercase hex digits. */
void mt_fw_put_hex32(uint32_t value);
/** @brief Write @p value with 4 decimals (for people; compare the bits, not this text). */
void mt_fw_put_float(float value);
/** @brief The IEEE-754 bit pattern of @p value. */
uint32_t mt_fw_float_bits(float value);

/**
 * @brief Check the plan and bind the session to the static arena.
 *
 * Opens the session with mt_session_init() on the embedded image and configuration and
 * stops the program with MT_FW_EXIT_PLAN_MISMATCH if its plan's total (mt_session_plan(), or
 * mt_plan() when init refuses) differs from MT_FW_ARENA_BYTES, the figure the host computed
 * when it generated the data. Any other error status prints a line and stops with
 * MT_FW_EXIT_CORE_ERROR.
 * @param[out] cfg the configuration the session was opened with
 * @return the session (never NULL: failures do not return)
 */
mt_session *mt_fw_open_session(mt_train_config *cfg);

/**
 * @brief Copy rows [first, first + n) of a dataset into the session's input and target
 *        buffers. @p x holds the rows back to back, MT_FW_INPUT_ROW_BYTES each (float32, or
 *        int8 of any length), @p y MT_FW_TARGET_WORDS words per row.
 */
void mt_fw_load_rows(mt_session *s, const uint32_t *x, const uint32_t *y, int32_t first,
                     int32_t n);

/**
 * @brief CRC-32 (IEEE, zlib.crc32) over every weight tensor in tensor-table order, the
 *        float ones and an int8 layer's trained in place at their own width: the arena copy
 *        when trained, the image's otherwise (mt_session_weights_crc32()).
 */
uint32_t mt_fw_weights_crc32(mt_session *s);

/**
 * @brief Correct predictions among rows [first, first + n) of @p y, scored on output 0 of
 *        the last step as MT_FW_ACCURACY says (0 for MT_FW_ACCURACY_NONE).
 */
uint32_t mt_fw_count_correct(mt_session *s, const uint32_t *y, int32_t first, int32_t n);

/** @brief What mt_fw_count_correct() counts out of, over @p rows rows. */
uint32_t mt_fw_accuracy_total(int32_t rows);

/** @brief Stop on an error status: print "error: <call>: <status text>" and exit 1. */
void mt_fw_check(mt_status status, const char *call);

#endif /* MT_FW_APP_H */
