/*
 * mt_board_exit() through QEMU virt's test device ("sifive,test0" at MT_BOARD_TEST_BASE,
 * 0x100000): writing 0x5555 ends QEMU with status 0, (code << 16) | 0x3333 with code. A
 * process status has 8 bits: a failing status whose low byte is 0 exits with 1, not 0. Returning from main through a semihosting exit did not end QEMU 7.2, and
 * semihosting would need a debugger on real parts, which bring their own exit.
 */
#include <stdint.h>

#include "mt_board.h"

#ifndef MT_BOARD_TEST_BASE
#error "board.cmake must define MT_BOARD_TEST_BASE"
#endif

#define TEST_PASS 0x5555u
#define TEST_FAIL 0x3333u

void mt_board_exit(int status)
{
    volatile uint32_t *test = (volatile uint32_t *)(uintptr_t)MT_BOARD_TEST_BASE;
    const uint32_t code = (uint32_t)status & 0xFFu;
    *test = status == 0 ? TEST_PASS : (code ? code : 1u) << 16 | TEST_FAIL;
    for (;;) /* not reached under QEMU */
        __asm__ volatile("wfi");
}
