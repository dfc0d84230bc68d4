/* Convolutional test models (model_zoo.c); images come from malloc, release with free(). */
#ifndef MODEL_ZOO_H
#define MODEL_ZOO_H

#include "image_builder.h"

/* x[8,8,1] -> Conv 3x3x8 SAME relu -> MaxPool 2 -> Conv 3x3x16 VALID relu -> GAP -> Dense 10 -> Softmax */
uint8_t *mz_digits_cnn(size_t *bytes);

/* x[6,6,2] -> Conv 3x3x4 SAME relu -> y1 -> Depthwise 3x3 SAME relu6 -> y2; Add(y1, y2) -> y3;
 * Concatenation(y3, y1) -> [6,6,8] -> GAP -> Dense 5 -> Softmax */
uint8_t *mz_residual_dag(size_t *bytes);

/* What an imported ONNX image model computes: x[3,6,6] (NCHW sample) -> Transpose to [6,6,3]
 * -> Sub mean[3] -> Mul scale[3] (frozen constants) -> Pad (top 1, right 1) [7,7,3] -> Conv
 * 3x3x4 VALID stride 2 relu -> y1 [3,3,4] -> Depthwise 3x3 SAME -> y2; Mul(y1, y2) -> Sub(·, y1)
 * -> Transpose [4,3,3] -> Transpose [3,3,4] -> GAP -> Dense 5 -> Softmax */
uint8_t *mz_layout_graph(size_t *bytes);

#endif /* MODEL_ZOO_H */
