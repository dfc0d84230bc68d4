/*
 * Cost benchmark firmware: open the session, load one batch, run MT_FW_BENCH_STEPS train
 * steps, exit. benchmarks/arm_cost.py counts the instructions QEMU executes for two builds
 * of this file (0 and MT_BENCH_STEPS steps, see boards/app/CMakeLists.txt): the difference
 * divided by the step count is the exact cost of one train step on that core.
 */
#include "fw_app.h"

#ifdef MT_FW_PROFILE
/* The core of this program calls mt_op_profile_mark(region) around each op's forward,
 * backward and update (MT_OP_PROFILE, session.c). The store to marks[region] is what the
 * insn_count plugin watches (marks=, mark_fn= arguments): each one ends the previous region. */
#define MT_FW_PROFILE_REGIONS 1024u
volatile uint32_t mt_fw_profile_marks[MT_FW_PROFILE_REGIONS];
void mt_op_profile_mark(uint32_t region);
__attribute__((noinline)) void mt_op_profile_mark(uint32_t region)
{
    mt_fw_profile_marks[region % MT_FW_PROFILE_REGIONS] = region;
}
#endif

#ifndef MT_FW_BENCH_STEPS
#error "define MT_FW_BENCH_STEPS"
#endif

int main(void)
{
    mt_train_config cfg;
    mt_session *s = mt_fw_open_session(&cfg);
    int32_t n = MT_FW_TRAIN_ROWS < cfg.batch_size ? MT_FW_TRAIN_ROWS : cfg.batch_size;
    mt_fw_load_rows(s, mt_fw_train_x, mt_fw_train_y, 0, n);
    /* an int8 input (a quantized frame) is consumed by each step: load it again */
    for (int32_t step = 0; step < MT_FW_BENCH_STEPS; step++) {
        if (MT_FW_INPUT_INT8 && step > 0) mt_fw_load_rows(s, mt_fw_train_x, mt_fw_train_y, 0, n);
        mt_fw_check(mt_session_train_step(s, n, NULL), "mt_session_train_step");
    }
    mt_fw_puts("bench: ");
    mt_fw_put_u32((uint32_t)MT_FW_BENCH_STEPS);
    mt_fw_puts(" train steps of ");
    mt_fw_put_u32((uint32_t)n);
    mt_fw_puts(" rows\n");
    return MT_FW_EXIT_OK;
}
