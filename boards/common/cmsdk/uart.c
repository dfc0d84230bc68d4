/*
 * Console on the CMSDK APB UART of the Arm MPS2 boards (polled, transmit only).
 * MT_BOARD_UART0_BASE comes from the board's board.cmake.
 */
#include <stdint.h>

#include "mt_board.h"

#ifndef MT_BOARD_UART0_BASE
#error "board.cmake must define MT_BOARD_UART0_BASE"
#endif

typedef struct {
    volatile uint32_t data;    /* 0x00 */
    volatile uint32_t state;   /* 0x04: bit 0 = transmit buffer full */
    volatile uint32_t ctrl;    /* 0x08: bit 0 = transmit enable */
    volatile uint32_t intr;    /* 0x0C */
    volatile uint32_t bauddiv; /* 0x10: at least 16 */
} cmsdk_uart;

#define UART0 ((cmsdk_uart *)(uintptr_t)(MT_BOARD_UART0_BASE))
#define UART_STATE_TX_FULL 1u
#define UART_CTRL_TX_ENABLE 1u

void mt_board_init(void)
{
    UART0->bauddiv = 16u;
    UART0->ctrl = UART_CTRL_TX_ENABLE;
}

void mt_board_putc(char c)
{
    while (UART0->state & UART_STATE_TX_FULL) {
    }
    UART0->data = (uint32_t)(unsigned char)c;
}
