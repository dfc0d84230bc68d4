/*
 * mt_board_exit() through Arm semihosting: SYS_EXIT_EXTENDED (0x20) with the block
 * {ADP_Stopped_ApplicationExit, status}. QEMU started with
 * `-semihosting-config enable=on,target=native` exits with that status; on a board without a
 * debugger attached the breakpoint would stop the core, so real boards bring their own exit.
 */
#include <stdint.h>

#include "mt_board.h"

#define SYS_EXIT_EXTENDED 0x20u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

void mt_board_exit(int status)
{
    const uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
    register uint32_t r0 __asm__("r0") = SYS_EXIT_EXTENDED;
    register const uint32_t *r1 __asm__("r1") = block;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) /* not reached under QEMU */
        __asm__ volatile("wfi");
}
