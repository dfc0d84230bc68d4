/*
 * Startup for every 32-bit RISC-V board: the entry point _start, the trap handler.
 *
 * _start (first in FLASH, see sections.ld) runs in machine mode with nothing set up: it loads
 * gp (the linker relaxes small-data accesses against it, so it must not be relaxed itself),
 * sp and the trap vector, turns the FPU on where the core has one (mstatus.FS = Initial: with
 * FS Off every float instruction traps) with fcsr cleared (round to nearest, ties to even;
 * RISC-V has no flush-to-zero mode, so subnormals are always kept), and calls mt_start(),
 * which copies .data and .tdata from flash, zeroes .tbss and .bss, points tp at the
 * thread-local block (picolibc's errno lives there) and runs main(); main's return value goes
 * to mt_board_exit(). That is the arithmetic the host does, which bit-identity needs.
 *
 * Symbols from common/riscv/sections.ld: __global_pointer$, __stack_top, __data_load,
 * __data_start, __data_end, __tdata_load, __tls_base, __tdata_end, __tbss_end, __bss_start,
 * __bss_end.
 */
#include <stdint.h>

#include "mt_board.h"
#include "../stack_paint.h"

extern const uint32_t __data_load, __tdata_load;
extern uint32_t __stack_top;
extern uint32_t __data_start, __data_end, __tls_base, __tdata_end, __tbss_end, __bss_start,
    __bss_end;

int main(void);
void mt_start(void) __attribute__((noreturn));
void mt_fault_handler(void) __attribute__((noreturn));

/* mstatus.FS (bits 13-14) = 01, Initial: the FPU is usable. The csr instructions need Zicsr,
 * which -march=rv32imac leaves out of the assembler's ISA (GCC 12, binutils 2.40). */
#if defined(__riscv_flen)
#define MT_ENABLE_FPU "li t0, 0x2000\n\tcsrs mstatus, t0\n\tcsrwi fcsr, 0\n\t"
#else
#define MT_ENABLE_FPU ""
#endif

__asm__(".pushsection .text.mt_start, \"ax\", @progbits\n"
        ".globl _start\n"
        ".type _start, @function\n"
        "_start:\n\t"
        ".option push\n\t"
        ".option norelax\n\t"
        ".option arch, +zicsr\n\t"
        "la gp, __global_pointer$\n\t"
        "la sp, __stack_top\n\t"
        "la t0, mt_trap_entry\n\t"
        "csrw mtvec, t0\n\t"
        MT_ENABLE_FPU
        "call mt_start\n"
        /* direct-mode trap vector: 4-byte aligned; sp may be anything, so set it again */
        ".balign 4\n"
        "mt_trap_entry:\n\t"
        "la sp, __stack_top\n\t"
        "call mt_fault_handler\n\t"
        ".option pop\n"
        ".size _start, . - _start\n"
        ".popsection\n");

void mt_start(void)
{
    /* volatile: keep these loops as written (a memcpy/memset call would be built on picolibc,
     * which may expect the thread pointer this sets up) */
    const volatile uint32_t *src = &__data_load;
    for (volatile uint32_t *dst = &__data_start; dst < &__data_end;)
        *dst++ = *src++;
    src = &__tdata_load;
    volatile uint32_t *dst = &__tls_base;
    for (; dst < &__tdata_end;)
        *dst++ = *src++;
    for (; dst < &__tbss_end;)
        *dst++ = 0u;
    for (dst = &__bss_start; dst < &__bss_end;)
        *dst++ = 0u;
    __asm__ volatile("mv tp, %0" : : "r"(&__tls_base) : "memory");
    uint32_t *sp;
    __asm__ volatile("mv %0, sp" : "=r"(sp));
    mt_stack_paint((uint32_t *)&__bss_end, sp - 16); /* 64 bytes below this frame stay as they are */
    mt_board_init();
    mt_board_exit(main());
}

uint32_t mt_board_stack_used(void)
{
    return mt_stack_high_water(&__bss_end, &__stack_top);
}

static void put_hex32(uint32_t value)
{
    static const char hex[] = "0123456789abcdef";
    for (int shift = 28; shift >= 0; shift -= 4)
        mt_board_putc(hex[(value >> shift) & 0xFu]);
}

static void put_text(const char *text)
{
    while (*text)
        mt_board_putc(*text++);
}

/* Any trap (an illegal instruction, a misaligned or faulting access; no interrupt is
 * enabled): say which and where, and stop with a status no test accepts. */
void mt_fault_handler(void)
{
    uint32_t cause, pc, value;
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\t"
                     "csrr %0, mcause\n\tcsrr %1, mepc\n\tcsrr %2, mtval\n\t.option pop"
                     : "=r"(cause), "=r"(pc), "=r"(value));
    put_text("\nFAULT: trap mcause 0x");
    put_hex32(cause);
    put_text(" mepc 0x");
    put_hex32(pc);
    put_text(" mtval 0x");
    put_hex32(value);
    put_text(", stopping\n");
    mt_board_exit(3);
}
