/* Convolutional test models (model_zoo.c); images come from malloc, release with free(). */
#ifndef MODEL_ZOO_H
#define MODEL_ZOO_H

#include "image_builder.h"

/* x[8,8,1] -> Conv 3x3x8 SAME relu -> MaxPool 2 -> Conv 3x3x16 VALID relu -> GAP -> Dense 10 -> Softmax */
uint8_t *mz_digits_cnn(size_t *bytes);

/* x[6,6,2] -> Conv 3x3x4 SAME relu -> y1 -> Depthwise 3x3 SAME relu6 -> y2; Add(y1, y2) -> y3;
 * Concatenation(y3, y1) -> [6,6,8] -> GAP -> Dense 5 -> Softmax */
uint8_t *mz_residual_dag(size_t *bytes);

#endif /* MODEL_ZOO_H */
