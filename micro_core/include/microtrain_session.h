/**
 * @file microtrain_session.h
 * @brief The session: init on a caller's arena, its input, output and target buffers, the
 *        steps, hyper-parameters, counters and weights (part of microtrain.h, which includes
 *        it after the plan and configuration it builds on).
 */
/* microtrain.h first: it includes this file at its end, so a program that includes only this
 * one still gets the whole API, in order */
#include "microtrain.h"

#ifndef MICROTRAIN_SESSION_H
#define MICROTRAIN_SESSION_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Session                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct mt_session mt_session; /**< opaque; lives at the start of the arena */

/**
 * @brief Bind a session to a caller-provided arena from the plan mt_plan() wrote for its image
 *        and configuration: the image is not validated again, nor the arena sized again.
 *
 * The plan names its image (plan->image, plan->image_bytes). Init checks, in the size of the
 * image's header and tables (not of the whole image), that the plan is a plan of this library
 * sealed as mt_plan() wrote it, that the image's header and tables are those mt_plan()
 * validated and that @p cfg is the configuration it planned; then it lays the session out
 * (the planner's build pass: which weights train, lifetimes, placement, the tables), which must
 * come to the plan's figures. Rule: the image stays as it is from mt_plan() until the session
 * ends (frozen weights written through mt_session_param() aside), as a running session reads
 * it in place: a change to its header or tables is refused here, a change to its weight data
 * or quantization records is not seen. A plan may be used again (another arena, after a
 * session ends); mt_session_plan() returns a session's plan, bound the same way.
 * @param[out] session     the session (points into @p arena)
 * @param[in]  plan        what mt_plan() (or mt_session_plan()) wrote; may lie anywhere, even
 *                         in @p arena (it is read first)
 * @param[in]  cfg         the configuration planned (copied; its op mask is read again)
 * @param[in]  arena       MT_ARENA_ALIGN-aligned memory; must outlive the session
 * @param[in]  arena_bytes size of @p arena, >= plan->total_bytes
 * @return MT_OK, MT_ERR_ARENA_TOO_SMALL, MT_ERR_BAD_ARGUMENT (NULL, misaligned arena; a plan
 *         that is not one of this library's as it wrote it, or of another image, header or
 *         tables changed since, or of another configuration), MT_ERR_BAD_MODEL /
 *         MT_ERR_UNSUPPORTED (the image's header no longer valid).
 */
MT_API mt_status mt_session_init_from_plan(mt_session **session, const mt_memory_plan *plan,
                                           const mt_train_config *cfg, void *arena, size_t arena_bytes);

/**
 * @brief mt_plan() and mt_session_init_from_plan() in one call, for a caller that keeps no
 *        plan (a firmware whose arena size the host computed): the image is validated once,
 *        planned once and laid out; mt_session_plan() then gives the plan.
 * @param[out] session     the session (points into @p arena)
 * @param[in]  image       model image; must outlive the session, unchanged (see
 *                         mt_session_init_from_plan())
 * @param[in]  image_bytes size of @p image
 * @param[in]  cfg         configuration (copied)
 * @param[in]  arena       MT_ARENA_ALIGN-aligned memory; must outlive the session
 * @param[in]  arena_bytes size of @p arena, >= mt_plan().total_bytes
 * @return MT_OK, MT_ERR_ARENA_TOO_SMALL (nothing written), or any mt_plan() status.
 */
MT_API mt_status mt_session_init(mt_session **session, const void *image, size_t image_bytes,
                                 const mt_train_config *cfg, void *arena, size_t arena_bytes);

/** @brief The plan the session was laid out with, bound to its image and configuration. */
MT_API mt_status mt_session_plan(const mt_session *s, mt_memory_plan *plan);

/**
 * @brief Input buffer number @p position: [B, D] floats inside the arena; for an int8 input
 *        (image version 3, mt_tensor_info.dtype MT_DTYPE_I8) [B, D] int8 values, quantized
 *        by the caller with the input's scale and zero point: cast @p data to int8_t *.
 *        An int8 input is consumed by each step (its bytes are reused once its last reader
 *        has run): write its rows before every step.
 * @param[out] data  first element; write rows 0..n-1 before a step
 * @param[out] count elements in the buffer (B·D)
 */
MT_API mt_status mt_session_input(mt_session *s, int32_t position, float **data, int32_t *count);

/**
 * @brief Model input (@p is_output 0) or output (1) number @p position, described as
 *        mt_model_tensor() describes it (info->index is its tensor index, info->dtype says
 *        whether an input is int8), from the session's image without validating it again.
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL or invalid session, NULL @p info, @p is_output not
 *         0 or 1, @p position out of range).
 */
MT_API mt_status mt_session_io(const mt_session *s, int32_t is_output, int32_t position,
                               mt_tensor_info *info);

/** @brief Output buffer number @p position: [B, D] floats, valid for the rows of the last step. */
MT_API mt_status mt_session_output(const mt_session *s, int32_t position, const float **data,
                                   int32_t *count);

/**
 * @brief Target buffer of the loss: [B, D] floats for output 0, or [B] int32 labels for
 *        sparse categorical cross-entropy.
 * @param[out] bytes size of the buffer in bytes
 */
MT_API mt_status mt_session_target(mt_session *s, void **data, int32_t *bytes);

/**
 * @brief One optimizer step: zero gradients, forward, loss, backward, update.
 * @param[in]  n    valid rows 1..B; rows n..B-1 are ignored entirely, so loss and
 *                  update equal those of a step with batch size n
 * @param[out] loss reduced loss of the step (may be NULL)
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (n out of range, label out of range),
 *         MT_ERR_STATE (nothing trainable), MT_ERR_NUMERIC (non-finite loss: nothing updated;
 *         non-finite gradient or update: see mt_train_config.guard_gradients).
 */
MT_API mt_status mt_session_train_step(mt_session *s, int32_t n, float *loss);

/** @brief Set every gradient of trained weights to zero and forget the rows accumulated.
 *  @return MT_OK, MT_ERR_STATE (session planned with fused updates: accumulate_gradients = 0). */
MT_API mt_status mt_session_zero_grad(mt_session *s);

/**
 * @brief Forward, loss and backward; gradients are added to what they hold (accumulation).
 *
 * Gradients accumulate as sums over samples; mt_session_optimizer_step() then applies the
 * reduction over every row accumulated since the last zero_grad (MEAN divides by their
 * count), so k accumulated batches of n rows give the update of one batch of k·n rows.
 * The loss reported is this call's own reduced loss.
 * @return as mt_session_train_step(); MT_ERR_NUMERIC leaves the gradients unchanged.
 */
MT_API mt_status mt_session_accumulate(mt_session *s, int32_t n, float *loss);

/** @brief Apply the optimizer to the accumulated gradients and advance the step counter.
 *  Every tensor's update is checked first: a NaN or infinity in any gradient, or in any
 *  weight or state element an update would write, applies nothing and leaves the counters
 *  and the accumulated gradients as they were (lower the learning rate and call again, or
 *  zero_grad).
 *  @return MT_OK, MT_ERR_STATE (nothing trained, no rows accumulated, or fused updates),
 *          MT_ERR_NUMERIC. */
MT_API mt_status mt_session_optimizer_step(mt_session *s);

/** @brief Forward and loss, no gradients. Same arguments as mt_session_train_step(). */
MT_API mt_status mt_session_eval_step(mt_session *s, int32_t n, float *loss);

/** @brief Forward only; outputs hold rows 0..n-1. */
MT_API mt_status mt_session_infer(mt_session *s, int32_t n);

/**
 * @brief mt_session_train_step() on rows the caller holds, read where they are.
 *
 * inputs[k], for each of the model's inputs k, points at n rows of input k laid out as
 * mt_session_input() lays them out (row after row, each the sample's elements), or is NULL
 * for the rows already in the session's input buffer. The step reads the rows during the
 * call only, never writes them and keeps no pointer to them; loss, gradients and weights are
 * bit for bit those of copying the rows into the input buffer and calling
 * mt_session_train_step(). Rows that overlap the arena, are not MT_ARENA_ALIGN-aligned,
 * belong to an input the model also returns as an output or to an int8 input (cast its
 * int8_t rows as for mt_session_input()) are copied into the input buffer first (same
 * result); other rows are not copied, which saves the copy's time and cache (a sensor's or a
 * dataset's buffer, a numpy array).
 * @return as mt_session_train_step(); MT_ERR_BAD_ARGUMENT also for a NULL inputs.
 */
MT_API mt_status mt_session_train_step_rows(mt_session *s, int32_t n, const float *const *inputs, float *loss);

/** @brief mt_session_eval_step() on rows the caller holds (inputs as mt_session_train_step_rows()). */
MT_API mt_status mt_session_eval_step_rows(mt_session *s, int32_t n, const float *const *inputs, float *loss);

/** @brief mt_session_infer() on rows the caller holds (inputs as mt_session_train_step_rows()). */
MT_API mt_status mt_session_infer_rows(mt_session *s, int32_t n, const float *const *inputs);

/**
 * @brief What the last failing step call of the session concerned (train_step, accumulate,
 *        zero_grad, eval_step, infer): its status, and the op or tensor at fault (a bad
 *        label or a non-finite loss names output 0's tensor; a non-finite gradient or update
 *        names the op reading the weight and the weight's tensor). Successful calls leave it;
 *        {MT_OK, -1, 0, -1} until a call fails.
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL or invalid session, NULL @p detail).
 */
MT_API mt_status mt_session_last_error(const mt_session *s, mt_error_detail *detail);

/** @brief Steps refused because the loss, a gradient or an update was NaN or infinite
 *  (MT_ERR_NUMERIC). */
MT_API mt_status mt_session_numeric_errors(const mt_session *s, int64_t *count);

/** @brief Change the learning rate (schedulers call this between steps); >= 0, finite. */
MT_API mt_status mt_session_set_learning_rate(mt_session *s, float learning_rate);
MT_API mt_status mt_session_get_learning_rate(const mt_session *s, float *learning_rate);

/**
 * @brief The base learning rate a schedule scales (lr(step) = base · factor(step)): the
 *        configuration's learning_rate at init, or the base stored in the last checkpoint
 *        loaded (versions 2 and 3; a version 1 checkpoint leaves it). mt_session_set_learning_rate()
 *        does not change it, so a resumed run continues the original run's schedule.
 * @param[out] learning_rate the base rate, > 0
 * @return MT_OK, MT_ERR_BAD_ARGUMENT.
 */
MT_API mt_status mt_session_get_base_learning_rate(const mt_session *s, float *learning_rate);

/**
 * @brief Copy the current trained weights into the proximal term's reference w_ref
 *        (mt_train_config.proximal_mu): a federated client calls it after loading the
 *        round's global weights, so that local training is pulled towards them. A checkpoint
 *        saved with the optimizer state keeps the reference (format version 3) and restores it.
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL or invalid session), MT_ERR_STATE (the session
 *         was planned with proximal_mu = 0: it holds no reference).
 */
MT_API mt_status mt_session_set_reference(mt_session *s);

/** @brief Optimizer steps taken and the epoch counter (the caller advances epochs).
 *  Either output may be NULL. */
MT_API mt_status mt_session_counters(const mt_session *s, int64_t *step, int64_t *epoch);
MT_API mt_status mt_session_set_epoch(mt_session *s, int64_t epoch);

/** One weight tensor of the model: a CONST f32 tensor (mt_session_param), or an int8 weight or
 *  int32 bias of an int8 layer trained in place (mt_session_qparam). */
typedef struct mt_param_info {
    int32_t tensor_index;
    int32_t count;   /**< elements */
    int32_t trained; /**< 1: lives in the arena and is updated; 0: read from the image */
    int32_t dtype;   /**< MT_DTYPE_F32, or (mt_session_qparam) MT_DTYPE_I8 / MT_DTYPE_I32: the
                          two pointers then point at int8_t / int32_t values (cast them) */
    float *data;     /**< arena copy when trained, else NULL */
    const float *image_data; /**< the weights as stored in the image */
    int32_t held;    /**< elements data holds: count when trained whole, the first rows' when a
                          sparse update trains a float Dense's or Conv2D's (an int8
                          FullyConnected's or pointwise Conv2D's trained in place) first k
                          output channels (elements held.. are image_data's, read in place), 0
                          when frozen */
} mt_param_info;

/** @brief Number of CONST f32 tensors (weights, trained or frozen) in the image. */
MT_API mt_status mt_session_param_count(const mt_session *s, int32_t *count);

/** @brief Describe weight tensor number @p position (0..count-1, tensor-table order). */
MT_API mt_status mt_session_param(mt_session *s, int32_t position, mt_param_info *info);

/** @brief Number of quantized parameters: the TRAINABLE int8 weights and int32 biases of int8
 *  layers that train in place (convert's int8_train), trained by this session or not. 0 for a
 *  model without. */
MT_API mt_status mt_session_qparam_count(const mt_session *s, int32_t *count);

/** @brief Describe quantized parameter number @p position (0..count-1, tensor-table order):
 *  dtype MT_DTYPE_I8 (a weight) or MT_DTYPE_I32 (a bias); data and image_data point at its
 *  int8_t / int32_t values. A caller may write a trained one's values through data (any value
 *  of its type), then calls mt_session_qparam_written().
 *  @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, invalid session, @p position out of range). */
MT_API mt_status mt_session_qparam(mt_session *s, int32_t position, mt_param_info *info);

/** @brief After writing quantized parameter @p position's values: an int8 weight with a float
 *  master copy (MT_TENSOR_MASTER) restarts its copy from them (m = W_q), so the next step
 *  starts from the weight written. Nothing else to do for the others.
 *  @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, invalid session, @p position out of range). */
MT_API mt_status mt_session_qparam_written(mt_session *s, int32_t position);

/** @brief CRC-32 (IEEE, zlib.crc32) of every weight in tensor-table order, each as its values'
 *  little-endian bytes at their own width: the f32 weights (mt_session_param) and the
 *  quantized parameters (mt_session_qparam, int8 1 byte, int32 4), trained ones as they are
 *  now. The figure a firmware prints and the host tools compute; a model without quantized
 *  parameters has the CRC of its f32 weights alone.
 *  @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL or invalid session). */
MT_API mt_status mt_session_weights_crc32(const mt_session *s, uint32_t *crc);

#ifdef __cplusplus
}
#endif

#endif /* MICROTRAIN_SESSION_H */
