/*
 * printf on the board console for test programs built with picolibc (the RISC-V boards): its
 * stdout is a FILE the program defines, here one whose put function is mt_board_putc(). The
 * core and the example firmware print without stdio (fw_app.c); tests/core programs built as
 * firmware (microtrain_fma_test) use printf.
 */
#include <stdio.h>

#include "mt_board.h"

static int console_put(char c, FILE *file)
{
    (void)file;
    mt_board_putc(c);
    return (unsigned char)c;
}

static FILE console = FDEV_SETUP_STREAM(console_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdout = &console;
