/* The int8 cases of the sibling test (siblings_s8.c), shared by the device's test
 * (siblings.c) and the host's (tests/core/test_int8_siblings.c). */
#ifndef MT_BOARD_SIBLINGS_S8_H
#define MT_BOARD_SIBLINGS_S8_H

typedef void (*s8_check_fn)(int ok, const char *what); /* counts a pass, or reports the failure */

/* every int8 sibling beside its reference kernel, each comparison one check(); returns their
 * number (128: tests/boards/test_board_siblings.py expects it of the Cortex-M3) */
unsigned s8_sibling_cases(s8_check_fn check);

#endif /* MT_BOARD_SIBLINGS_S8_H */
