/*
 * Startup for every Cortex-M board: vector table, reset handler, fault handler.
 *
 * The reset handler enables the FPU on cores that have one (before any float instruction can
 * run), copies .data from flash to RAM, zeroes .bss, paints the free stack (stack_paint.h)
 * and calls main(); main's return value goes
 * to mt_board_exit(). The FPSCR is left at its reset value, so denormals are kept (FZ = 0)
 * and rounding is to nearest: the arithmetic the host does, which bit-identity needs.
 *
 * Symbols from common/cortex-m/sections.ld: __stack_top, __data_load, __data_start,
 * __data_end, __bss_start, __bss_end.
 */
#include <stdint.h>

#include "mt_board.h"
#include "../stack_paint.h"

extern uint32_t __stack_top;
extern const uint32_t __data_load;
extern uint32_t __data_start, __data_end, __bss_start, __bss_end;

int main(void);
void mt_reset_handler(void);
void mt_fault_handler(void);

/* Coprocessor Access Control Register: CP10 and CP11 (the FPU) are bits 20..23. */
#define CPACR (*(volatile uint32_t *)0xE000ED88u)
#define CPACR_CP10_CP11_FULL (0xFu << 20)

__attribute__((noreturn)) void mt_reset_handler(void)
{
#if defined(__ARM_FP)
    CPACR |= CPACR_CP10_CP11_FULL;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    /* volatile: keep these loops as written; memcpy/memset could be built with FP registers */
    const volatile uint32_t *src = &__data_load;
    for (volatile uint32_t *dst = &__data_start; dst < &__data_end;)
        *dst++ = *src++;
    for (volatile uint32_t *dst = &__bss_start; dst < &__bss_end;)
        *dst++ = 0u;
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    mt_stack_paint(&__bss_end, sp - 16); /* 64 bytes below this frame stay as they are */
    mt_board_init();
    mt_board_exit(main());
}

uint32_t mt_board_stack_used(void)
{
    return mt_stack_high_water(&__bss_end, &__stack_top);
}

/* Any fault or unexpected interrupt: say so and stop with a status no test accepts. */
__attribute__((noreturn)) void mt_fault_handler(void)
{
    static const char message[] = "\nFAULT: unexpected exception, stopping\n";
    for (const char *p = message; *p; p++)
        mt_board_putc(*p);
    mt_board_exit(3);
}

typedef void (*mt_vector)(void);

/* Initial stack pointer, then the 15 system exceptions (reset first); no external IRQs used. */
__attribute__((section(".vectors"), used)) const mt_vector mt_vector_table[16] = {
    (mt_vector)&__stack_top,
    mt_reset_handler,
    mt_fault_handler, /* NMI */
    mt_fault_handler, /* HardFault */
    mt_fault_handler, /* MemManage */
    mt_fault_handler, /* BusFault */
    mt_fault_handler, /* UsageFault */
    mt_fault_handler, /* SecureFault (ARMv8-M) */
    0, 0, 0,
    mt_fault_handler, /* SVCall */
    mt_fault_handler, /* DebugMonitor */
    0,
    mt_fault_handler, /* PendSV */
    mt_fault_handler, /* SysTick */
};
