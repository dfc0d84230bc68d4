/*
 * Losses over the n valid rows of a step. p, y, z are [n, D] row-major.
 * Per-sample losses (Keras/onert convention; see microtrain.h for the formulas)
 * are reduced by MT_REDUCTION_MEAN (1/n Σ) or MT_REDUCTION_SUM (Σ).
 * Every function adds (+=) the gradient of the *reduced* loss into its gradient
 * argument when that argument is not NULL, and writes the reduced loss.
 */
#ifndef MT_LOSSES_H
#define MT_LOSSES_H

#include "microtrain.h"

/* Loss of probabilities/values p against targets. For MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY
 * target is int32 [n] labels in [0, D); otherwise float [n, D].
 * Returns MT_ERR_BAD_ARGUMENT for a label out of range (dp untouched). */
mt_status mt_loss_f32(int loss, int reduction, const float *p, const void *target, float *dp,
                      uint32_t n, uint32_t D, float *loss_out);

/* Softmax followed by (sparse) categorical cross-entropy, from the logits z: writes the
 * softmax output p = softmax(z) (mt_op_softmax_f32_forward's bits, also when a label is
 * refused; p must not overlap z), loss_i = -Σ_d y_d (z_d - max - log Σ e^(z - max)) and
 * dz_d += (p_d · Σ_k y_k - y_d) · scale. The session skips the softmax op's forward where
 * this runs. */
mt_status mt_loss_softmax_cce_f32(int sparse, int reduction, const float *z, float *p, const void *target,
                                  float *dz, uint32_t n, uint32_t D, float *loss_out);

/* Sigmoid followed by binary cross-entropy, from the logits z and p = sigmoid(z):
 * loss_id = max(z,0) - z·y + log(1 + e^-|z|);  dz += (p - y) · scale / D. */
mt_status mt_loss_sigmoid_bce_f32(int reduction, const float *z, const float *p, const float *y,
                                  float *dz, uint32_t n, uint32_t D, float *loss_out);

#endif /* MT_LOSSES_H */
