/* mt_board.h on a hosted system: stdout for the console, exit() for the status. */
#include <stdio.h>
#include <stdlib.h>

#include "mt_board.h"

void mt_board_init(void)
{
}

void mt_board_putc(char c)
{
    putchar(c);
}

uint32_t mt_board_stack_used(void)
{
    return 0u; /* the host's stack is not painted: not measured here */
}

void mt_board_exit(int status)
{
    fflush(stdout);
    exit(status);
}
