/* What the two files of the device's sibling test share (defined in siblings.c, but for
 * mve_elementwise_cases): random data, the bit comparison and the pass/fail count. */
#ifndef MT_BOARD_SIBLINGS_H
#define MT_BOARD_SIBLINGS_H

#include <stddef.h>

float uniform(float scale);                          /* uniform in [-scale, scale) */
void fill(float *v, size_t n, float scale);          /* n of uniform(scale) */
void check(int ok, const char *what);                /* counts a pass, or prints the failure */
int same(const float *a, const float *b, size_t n);  /* every bit equal */
void mve_elementwise_cases(void);                    /* siblings_mve.c, Helium builds only */

#endif /* MT_BOARD_SIBLINGS_H */
