/*
 * Console on a 16550-compatible UART (polled, transmit only): QEMU virt's ns16550a at
 * MT_BOARD_UART0_BASE (0x10000000), byte registers one apart.
 */
#include <stdint.h>

#include "mt_board.h"

#ifndef MT_BOARD_UART0_BASE
#error "board.cmake must define MT_BOARD_UART0_BASE"
#endif
#ifndef MT_BOARD_UART0_CLOCK_HZ
#error "board.cmake must define MT_BOARD_UART0_CLOCK_HZ"
#endif

#define UART_REG(offset) (*(volatile uint8_t *)(uintptr_t)(MT_BOARD_UART0_BASE + (offset)))
#define UART_THR UART_REG(0) /* transmit holding (DLAB = 0), divisor low byte (DLAB = 1) */
#define UART_IER UART_REG(1) /* interrupt enable (DLAB = 0), divisor high byte (DLAB = 1) */
#define UART_FCR UART_REG(2) /* FIFO control */
#define UART_LCR UART_REG(3) /* line control: bit 7 DLAB, bits 0-1 word length */
#define UART_LSR UART_REG(5) /* line status: bit 5 = transmit holding register empty */
#define LCR_DLAB 0x80u
#define LCR_8N1 0x03u
#define LSR_THR_EMPTY 0x20u
#define BAUD 115200u

void mt_board_init(void)
{
    const uint32_t divisor = MT_BOARD_UART0_CLOCK_HZ / (16u * BAUD);
    UART_IER = 0u;
    UART_LCR = LCR_DLAB;
    UART_THR = (uint8_t)divisor;
    UART_IER = (uint8_t)(divisor >> 8);
    UART_LCR = LCR_8N1;
    UART_FCR = 0x07u; /* FIFOs on and cleared */
}

void mt_board_putc(char c)
{
    while (!(UART_LSR & LSR_THR_EMPTY)) {
    }
    UART_THR = (uint8_t)c;
}
