/* The UART of microtrain's MicroPython board mps2-an505: the CMSDK APB UART0 (as ports/qemu's
 * uart.c drives it on the MPS2 boards) at its secure alias 0x50200000, for a core that runs in
 * the secure state. */
#include <stddef.h>
#include <stdint.h>

#include "uart.h"

typedef struct {
    volatile uint32_t DATA;
    volatile uint32_t STATE;
    volatile uint32_t CTRL;
    volatile uint32_t INTSTATUS;
    volatile uint32_t BAUDDIV;
} cmsdk_uart;

#define UART0 ((cmsdk_uart *)0x50200000u)
#define STATE_TXFULL (1u << 0)
#define STATE_RXFULL (1u << 1)
#define CTRL_TX_EN (1u << 0)
#define CTRL_RX_EN (1u << 1)

void uart_init(void) {
    UART0->BAUDDIV = 16;
    UART0->CTRL = CTRL_TX_EN | CTRL_RX_EN;
}

int uart_rx_chr(void) {
    if (!(UART0->STATE & STATE_RXFULL)) {
        return UART_RX_NO_CHAR;
    }
    return (int)UART0->DATA;
}

int uart_rx_any(void) {
    return (int)(UART0->STATE & STATE_RXFULL);
}

void uart_tx_strn(const char *buf, size_t len) {
    for (size_t i = 0; i < len; ++i) {
        while (UART0->STATE & STATE_TXFULL) {
        }
        UART0->DATA = (uint32_t)(unsigned char)buf[i];
    }
}
