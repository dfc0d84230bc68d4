/*
 * The example firmware: fine-tune the embedded model on the embedded dataset, on the device.
 *
 *   for each epoch:
 *       for each batch of B rows of the training set, in order (the last may be partial):
 *           train_step(n)                          loss_sum += loss · n
 *       set_epoch(epoch)
 *       for each batch of the evaluation set: eval_step(n), count correct predictions
 *       print the epoch's mean training loss, mean evaluation loss and accuracy
 *   print the CRC-32 of the weights; exit 0
 *
 * Every float is printed with its bit pattern, and the sums are float32 additions in this
 * order, so the host can replay the same sequence of core calls (microtrain.tools.firmware
 * .host_reference) and must print the same bits. UART lines (CRLF under QEMU):
 *
 *   microtrain firmware: model 5504 bytes, arena 12848 bytes (planned on the host, checked)
 *   train 150 rows, eval 80 rows, batch 16, 3 epochs
 *   epoch 1 train_loss 2.1234 (0x40080000) eval_loss 1.9876 (0x3ffe0000) accuracy 31/80
 *   ...
 *   weights crc32 0x1a2b3c4d
 *   stack used 2136 bytes (high-water mark of the painted stack; absent where not painted)
 *   microtrain firmware: done
 */
#include "fw_app.h"
#include "mt_board.h"

/* Mean loss of one pass over a dataset; trains when train != 0. Counts correct predictions. */
static float run_epoch(mt_session *s, int32_t batch, const uint32_t *x, const uint32_t *y,
                       int32_t rows, int train, uint32_t *correct)
{
    float loss_sum = 0.f;
    *correct = 0u;
    for (int32_t first = 0; first < rows; first += batch) {
        int32_t n = rows - first < batch ? rows - first : batch;
        float loss;
        mt_fw_load_rows(s, x, y, first, n);
        if (train) {
            mt_fw_check(mt_session_train_step(s, n, &loss), "mt_session_train_step");
        } else {
            mt_fw_check(mt_session_eval_step(s, n, &loss), "mt_session_eval_step");
            *correct += mt_fw_count_correct(s, y, first, n);
        }
        loss_sum += loss * (float)n;
    }
    return loss_sum / (float)rows;
}

static void put_loss(const char *name, float loss)
{
    mt_fw_puts(name);
    mt_fw_put_float(loss);
    mt_fw_puts(" (");
    mt_fw_put_hex32(mt_fw_float_bits(loss));
    mt_fw_puts(")");
}

int main(void)
{
    mt_train_config cfg;
    mt_session *s = mt_fw_open_session(&cfg);

    mt_fw_puts("microtrain firmware: model ");
    mt_fw_put_u32((uint32_t)MT_FW_MODEL_BYTES);
    mt_fw_puts(" bytes, arena ");
    mt_fw_put_u32((uint32_t)MT_FW_ARENA_BYTES);
    mt_fw_puts(" bytes (planned on the host, checked)\n");
    mt_fw_puts("train ");
    mt_fw_put_u32((uint32_t)MT_FW_TRAIN_ROWS);
    mt_fw_puts(" rows, eval ");
    mt_fw_put_u32((uint32_t)MT_FW_EVAL_ROWS);
    mt_fw_puts(" rows, batch ");
    mt_fw_put_u32((uint32_t)cfg.batch_size);
    mt_fw_puts(", ");
    mt_fw_put_u32((uint32_t)MT_FW_EPOCHS);
    mt_fw_puts(" epochs\n");

    for (int32_t epoch = 1; epoch <= MT_FW_EPOCHS; epoch++) {
        uint32_t correct;
        float train_loss = run_epoch(s, cfg.batch_size, mt_fw_train_x, mt_fw_train_y,
                                     MT_FW_TRAIN_ROWS, 1, &correct);
        mt_fw_check(mt_session_set_epoch(s, epoch), "mt_session_set_epoch");
        float eval_loss = run_epoch(s, cfg.batch_size, mt_fw_eval_x, mt_fw_eval_y,
                                    MT_FW_EVAL_ROWS, 0, &correct);
        mt_fw_puts("epoch ");
        mt_fw_put_u32((uint32_t)epoch);
        put_loss(" train_loss ", train_loss);
        put_loss(" eval_loss ", eval_loss);
#if MT_FW_ACCURACY != MT_FW_ACCURACY_NONE
        mt_fw_puts(" accuracy ");
        mt_fw_put_u32(correct);
        mt_fw_puts("/");
        mt_fw_put_u32(mt_fw_accuracy_total(MT_FW_EVAL_ROWS));
#endif
        mt_fw_puts("\n");
    }

    mt_fw_puts("weights crc32 ");
    mt_fw_put_hex32(mt_fw_weights_crc32(s));
    mt_fw_puts("\n");
    const uint32_t stack = mt_board_stack_used();
    if (stack) {
        mt_fw_puts("stack used ");
        mt_fw_put_u32(stack);
        mt_fw_puts(" bytes (high-water mark of the painted stack)\n");
    }
    mt_fw_puts("microtrain firmware: done\n");
    return MT_FW_EXIT_OK;
}
