/*
 * mt_board.h: what the example firmware needs from a board, and nothing more.
 *
 * A board folder (boards/<name>/) provides these three functions through the sources its
 * board.cmake lists. The QEMU mps2 boards take them from common/: a CMSDK UART for text and
 * semihosting for the exit status. A real board (say an STM32) brings its own UART driver and
 * decides what "exit" means there (a breakpoint, a reset, a LED), without edits elsewhere.
 */
#ifndef MT_BOARD_H
#define MT_BOARD_H

#include <stdint.h>

/** @brief Bring up what mt_board_putc() needs (clock, pins, UART). Called once, first. */
void mt_board_init(void);

/** @brief Write one character to the console (blocking). "\n" is sent as is. */
void mt_board_putc(char c);

/**
 * @brief End the program with @p status (0 = success). Under QEMU this is QEMU's exit code.
 *        Never returns.
 */
void mt_board_exit(int status) __attribute__((noreturn));

/**
 * @brief The stack's high-water mark so far, in bytes: the Cortex-M and RISC-V startups
 *        (common/stack_paint.h) paint the free RAM below the stack before main() and this
 *        finds the deepest word changed. 0 where nothing is painted (posix: the host's stack).
 */
uint32_t mt_board_stack_used(void);

#endif /* MT_BOARD_H */
