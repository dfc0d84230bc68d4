/**
 * @file microtrain.h
 * @brief microtrain: static-memory training of small neural networks (public C API).
 *
 * Three phases, none of which allocates:
 *
 *   1. plan   mt_plan() validates a model image (once: its CRC-32 over every
 *             byte, its tables, each op's checks) and plans it with a training
 *             configuration: the exact number of arena bytes the session will
 *             use, broken down by role, in a plan that also records the image
 *             and configuration it was made for. It touches no memory but its
 *             output.
 *   2. bind   mt_session_init_from_plan() lays the session out in a
 *             caller-provided arena (16-byte aligned) from that plan, without
 *             validating or sizing again (mt_session_init() does all three in
 *             one call, for a caller that keeps no plan).
 *   3. run    mt_session_train_step(), mt_session_eval_step(),
 *             mt_session_infer() read inputs and targets from fixed buffers
 *             inside the arena and never allocate.
 *
 * @code
 *   mt_train_config cfg;
 *   mt_train_config_init(&cfg);
 *   cfg.optimizer = MT_OPTIMIZER_ADAM;
 *   cfg.loss = MT_LOSS_CATEGORICAL_CROSSENTROPY;
 *   cfg.batch_size = 16;
 *
 *   mt_memory_plan plan;
 *   if (mt_plan(image, image_bytes, &cfg, &plan) != MT_OK) return;
 *   static uint8_t arena[ARENA_BYTES] __attribute__((aligned(16)));   // >= plan.total_bytes
 *   mt_session *s;
 *   if (mt_session_init_from_plan(&s, &plan, &cfg, arena, sizeof arena) != MT_OK) return;
 *
 *   float *x; int32_t x_count;                       // [batch, features...]
 *   void *y; int32_t y_bytes;                        // [batch, outputs...] or [batch] labels
 *   mt_session_input(s, 0, &x, &x_count);
 *   mt_session_target(s, &y, &y_bytes);
 *   // ... fill the first n rows of x and y ...
 *   float loss;
 *   mt_session_train_step(s, n, &loss);
 * @endcode
 *
 * Dimension names used below: B = batch size fixed at init, n = valid rows of
 * one step (1 <= n <= B), D = elements of one sample of a tensor.
 *
 * Ownership: the caller owns every byte. The model image and the arena must
 * outlive the session, and the image must stay as it is from mt_plan() on
 * (but for frozen weights written through mt_session_param()); every other
 * pointer is borrowed for the call only.
 * Frozen (not trained) weights are read in place from the image, which may sit
 * in flash; trained weights are copied into the arena at init.
 *
 * Exact bits: a session computes the same float32 bits as the host library
 * (and as every other target) only when the core, and any code whose float
 * arithmetic is compared with the host's, is compiled with -ffp-contract=off
 * and without fast-math (on 32-bit ARM also with -fno-tree-vectorize: GCC
 * vectorizes float code into Helium instructions, which flush subnormals),
 * and when the FPU runs at its reset settings: round to
 * nearest, denormals not flushed (FPSCR as after reset, FZ = 0). On a
 * Cortex-M with an FPU, the startup code enables it in CPACR (CP10, CP11)
 * before any float instruction runs and leaves FPSCR alone, as
 * boards/common/cortex-m/startup.c does; on RISC-V with F it sets
 * mstatus.FS and leaves fcsr's rounding mode at 0 (to nearest, ties to even;
 * RISC-V never flushes subnormals), as boards/common/riscv/startup.c does.
 */
#ifndef MICROTRAIN_H
#define MICROTRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(MT_BUILD_SHARED)
#define MT_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MT_API __attribute__((visibility("default")))
#else
#define MT_API
#endif

/** Bumped whenever a struct below or a function signature changes, or functions the bindings
 *  call are added (9: mt_session_train_step_rows and its siblings; 10: mt_model_tensors and
 *  mt_model_ops; 11: the plan's binding, mt_session_init_from_plan and mt_session_io; 13:
 *  mt_train_config.trainable_op_channels; 14: mt_param_info.dtype, mt_session_qparam and its
 *  siblings, mt_session_weights_crc32; 16: mt_param_info.held). The values and struct layouts the bindings mirror are
 *  described once, in micro_core/abi/microtrain_abi.json: tools/gen_abi.py writes the Python, JavaScript and
 *  MicroPython mirrors from it, and micro_core/src/abi_layout.h, which fails the build of any
 *  target whose header disagrees with it. */
#define MT_ABI_VERSION 17u
/** Required alignment of the arena, in bytes. */
#define MT_ARENA_ALIGN 16u
/** Most dimensions a tensor may have. */
#define MT_MAX_DIMS 4
/** Most tensors a model image may declare. The planner works on the stack, about
 *  24 bytes per tensor (6 KiB at 256): plan on the host where a device's stack is short. */
#define MT_MAX_TENSORS 256
/** Most ops a model image may declare. */
#define MT_MAX_OPS 256
/** Largest batch size B. */
#define MT_MAX_BATCH_SIZE 65535
/** Most elements of one tensor, and of B rows of one activation. */
#define MT_MAX_ELEMENTS (1u << 28)

/** Status of every fallible call: 0 is success, errors are negative. */
typedef enum mt_status {
    MT_OK = 0,
    MT_ERR_BAD_ARGUMENT = -1,    /**< NULL pointer, out-of-range value or misaligned buffer */
    MT_ERR_BAD_MODEL = -2,       /**< model image corrupt, truncated or inconsistent */
    MT_ERR_SHAPE = -3,           /**< tensor shapes or dtypes do not fit the op or loss */
    MT_ERR_STATE = -4,           /**< call not valid in the session's current state */
    MT_ERR_UNSUPPORTED = -5,     /**< valid request this build does not implement */
    MT_ERR_ARENA_TOO_SMALL = -6, /**< arena shorter than mt_plan() reported */
    MT_ERR_NUMERIC = -7,         /**< NaN or infinite loss or gradient, or an update that would make a
                                      weight or optimizer state NaN or infinite (e.g. a huge learning
                                      rate): step refused and counted (see guard_gradients) */
    MT_ERR_BAD_CHECKPOINT = -8,  /**< checkpoint corrupt, truncated, of an unknown version, or holding
                                      values no training run writes (NaN weights, negative Adam v) */
    MT_ERR_CHECKPOINT_MISMATCH = -9, /**< valid checkpoint of another model, optimizer or trained set */
    MT_ERR_IO = -10              /**< a read/write callback reported a failure */
} mt_status;

/** @brief Short English description of a status ("arena too small"). Never NULL. */
MT_API const char *mt_status_str(int status);

/** @brief Continue an IEEE CRC-32 (the value zlib.crc32 gives) over @p bytes; start with 0.
 *  Firmware uses it to fingerprint trained weights the way the host tools do. */
MT_API uint32_t mt_crc32_update(uint32_t crc, const void *data, size_t bytes);

/** @brief MT_ABI_VERSION of the compiled library (bindings compare it with theirs). */
MT_API uint32_t mt_abi_version(void);

/**
 * @brief sizeof() of a public struct as compiled, for bindings to check their mirrors.
 * @param[in] which 0 = mt_train_config, 1 = mt_memory_plan, 2 = mt_tensor_info,
 *                  3 = mt_model_info, 4 = mt_param_info, 5 = mt_property,
 *                  6 = mt_buffer_info, 7 = mt_op_info, 8 = mt_error_detail.
 * @return the size in bytes, or 0 for an unknown @p which.
 */
MT_API size_t mt_struct_size(int which);

/**
 * What a failing call concerned, beyond its status (mt_model_diagnose(),
 * mt_session_last_error()): tools print "op 3 (conv2d): tensor shape or dtype does not fit".
 */
typedef struct mt_error_detail {
    int32_t status;       /**< the failure described; MT_OK when there is none */
    int32_t op_index;     /**< the op it concerns, or -1 (header, tensor table, config, loss) */
    int32_t op_type;      /**< that op's mt_op_type (as stored, known or not), or 0 */
    int32_t tensor_index; /**< the tensor it concerns, or -1 */
} mt_error_detail;

/* ------------------------------------------------------------------------- */
/* Model image                                                                */
/* ------------------------------------------------------------------------- */

/** Element types. MT_DTYPE_I8 (image version 3) is a quantized tensor: it carries a
 *  quantization record (scale, zero point; per channel for weights, docs/model_format.md)
 *  and is read and written only by the int8 ops. Its gradient, where one passes through
 *  the int8 ops (a float layer trained inside an int8 model), is f32, with respect to the
 *  dequantized value (docs/model_format.md, "Gradients through int8 ops"). */
typedef enum mt_dtype { MT_DTYPE_F32 = 1, MT_DTYPE_I32 = 2, MT_DTYPE_I8 = 3 } mt_dtype;

/** Tensor flags in the model image. */
enum {
    MT_TENSOR_CONST = 1u,     /**< data stored in the image */
    MT_TENSOR_TRAINABLE = 2u, /**< a CONST tensor the optimizer may update: f32, or an int8 weight or
                                   int32 bias of an int8 layer trained in place */
    MT_TENSOR_INPUT = 4u,     /**< model input, filled by the caller */
    MT_TENSOR_OUTPUT = 8u,    /**< model output */
    MT_TENSOR_MASTER = 16u    /**< a TRAINABLE int8 weight that keeps a float master copy in the
                                   arena, which the update changes; the weight is its rounding */
};

/** Op types in the model image, MT_OP_<NAME> = code, one per row of microtrain_ops.def
 *  (where each has its one-line doc; operands and params: docs/model_format.md). */
typedef enum mt_op_type {
#define MT_OP(code, NAME, name, source) MT_OP_##NAME = code,
#include "microtrain_ops.def"
#undef MT_OP
} mt_op_type;

/**
 * @brief The name of op type @p op_type ("conv2d"; the `name` column of microtrain_ops.def,
 *        as MT_OPS spells it), whether or not this build has its kernel.
 * @return a static string, or NULL for a code that names no op.
 */
MT_API const char *mt_op_name(int32_t op_type);

/**
 * @brief Whether this build has the kernel of @p op_type. A core built with CMake's MT_OPS
 *        list has only the ops listed; a model using another is refused with
 *        MT_ERR_UNSUPPORTED (mt_model_diagnose() names the op).
 * @return 1 if it has, 0 if not (or if @p op_type names no op).
 */
MT_API int32_t mt_op_built(int32_t op_type);

/** Padding of spatial ops (params[2]): TFLite's rules, or (MAX_POOL2D and AVERAGE_POOL2D only)
 *  explicit pads before and after each axis, in params[3] (docs/model_format.md). */
enum { MT_PADDING_VALID = 0, MT_PADDING_SAME = 1, MT_PADDING_EXPLICIT = 2 };
/** Activation fused into Conv2D / DepthwiseConv2D (params[3]). */
enum { MT_FUSED_NONE = 0, MT_FUSED_RELU = 1, MT_FUSED_RELU6 = 2 };

/** Summary of a validated model image. */
typedef struct mt_model_info {
    int32_t version;
    int32_t num_tensors;
    int32_t num_ops;
    int32_t num_inputs;
    int32_t num_outputs;
    int32_t num_params;    /**< CONST tensors flagged TRAINABLE */
    int32_t param_count;   /**< elements over all TRAINABLE tensors */
    uint32_t crc32;
} mt_model_info;

/** One tensor as declared in the image. */
typedef struct mt_tensor_info {
    int32_t index;
    int32_t dtype;          /**< mt_dtype */
    int32_t flags;          /**< MT_TENSOR_* */
    int32_t ndim;
    int32_t dims[MT_MAX_DIMS]; /**< activations: one sample's shape (no batch dimension) */
    int32_t count;          /**< elements (one sample for activations) */
    int32_t producer;       /**< index of the op writing it, -1 for inputs and constants */
    int32_t data_offset;    /**< CONST: byte offset of its data (count elements, little-endian)
                                 from the start of the image; -1 for every other tensor */
} mt_tensor_info;

/** One op as declared in the image (docs/model_format.md, "Op entry"). */
typedef struct mt_op_info {
    int32_t index;
    int32_t type;           /**< mt_op_type */
    int32_t num_inputs;
    int32_t num_outputs;
    int32_t inputs[4];      /**< tensor indices; -1 for an absent optional input or an unused slot */
    int32_t outputs[2];     /**< tensor indices; -1 for an unused slot */
    uint32_t params[4];     /**< the op's parameters as stored (floats as their bits) */
    int32_t layer;          /**< the layer the op belongs to: the image's (version 2) or the op's
                                 own index (version 1, where every op is a layer) */
    int32_t reserved;
} mt_op_info;

/**
 * @brief Validate a model image completely (header, CRC, tables, shapes, op order).
 * @param[in]  image  image bytes, 4-byte aligned
 * @param[in]  image_bytes size of @p image
 * @param[out] info   summary (may be NULL)
 * @return MT_OK, MT_ERR_BAD_ARGUMENT, MT_ERR_BAD_MODEL, MT_ERR_SHAPE, MT_ERR_UNSUPPORTED.
 */
MT_API mt_status mt_model_check(const void *image, size_t image_bytes, mt_model_info *info);

/**
 * @brief Describe tensor @p index of a model image (validates the image first).
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (index out of range), MT_ERR_UNSUPPORTED (a CONST
 *         tensor's data beyond 2 GiB into the image, past what data_offset holds) or a
 *         validation status.
 */
MT_API mt_status mt_model_tensor(const void *image, size_t image_bytes, int32_t index,
                                 mt_tensor_info *info);

/**
 * @brief Describe op @p index (0..num_ops-1, execution order) of a model image (validates the
 *        image first). With mt_model_tensor() and mt_model_io() this is the whole graph, for
 *        tools and for backends that run it without the C session.
 * @param[out] info the op
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, index out of range) or a validation status.
 */
MT_API mt_status mt_model_op(const void *image, size_t image_bytes, int32_t index, mt_op_info *info);

/**
 * @brief Describe tensors @p first .. @p first + @p count - 1 at once: what mt_model_tensor()
 *        gives for each, after one validation of the image (a call per tensor validates and
 *        checksums the whole image per tensor: for a 640 KB MobileNetV2, 0.8 s in all on a PC).
 * @param[out] infos @p count entries
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, the range not inside the tensor table),
 *         MT_ERR_UNSUPPORTED (as mt_model_tensor()) or a validation status.
 */
MT_API mt_status mt_model_tensors(const void *image, size_t image_bytes, int32_t first, int32_t count,
                                  mt_tensor_info *infos);

/**
 * @brief Describe ops @p first .. @p first + @p count - 1 at once (mt_model_op() for each,
 *        one validation of the image).
 * @param[out] infos @p count entries
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, the range not inside the op table) or a validation
 *         status.
 */
MT_API mt_status mt_model_ops(const void *image, size_t image_bytes, int32_t first, int32_t count,
                              mt_op_info *infos);

/**
 * @brief Tensor index of model input or output number @p position.
 * @param[in] is_output 0 for inputs, 1 for outputs.
 * @param[out] tensor_index the tensor's index in the tensor table.
 */
MT_API mt_status mt_model_io(const void *image, size_t image_bytes, int32_t is_output,
                             int32_t position, int32_t *tensor_index);

/* ------------------------------------------------------------------------- */
/* Training configuration (onert-micro's OMTrainingContext, every field used) */
/* ------------------------------------------------------------------------- */

typedef enum mt_optimizer {
    MT_OPTIMIZER_SGD = 0,  /**< w -= lr·buf, buf = momentum·buf + (g + wd·w) */
    MT_OPTIMIZER_ADAM = 1, /**< PyTorch Adam: L2 weight decay, ε outside the square root */
    MT_OPTIMIZER_ADAMW = 2 /**< PyTorch AdamW: decoupled decay w -= lr·wd·w */
} mt_optimizer;

typedef enum mt_loss {
    MT_LOSS_MSE = 0,                             /**< per sample: mean_d (p - y)² */
    MT_LOSS_MAE = 1,                             /**< per sample: mean_d |p - y| */
    MT_LOSS_CATEGORICAL_CROSSENTROPY = 2,        /**< per sample: -Σ_d y·log p (p are probabilities) */
    MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY = 3, /**< per sample: -log p[label], int32 labels */
    MT_LOSS_BINARY_CROSSENTROPY = 4              /**< per sample: mean_d -(y·log p + (1-y)·log(1-p)) */
} mt_loss;

/** How per-sample losses combine over the n valid rows of a step. */
typedef enum mt_reduction {
    MT_REDUCTION_MEAN = 0, /**< (1/n) Σ_i loss_i */
    MT_REDUCTION_SUM = 1   /**< Σ_i loss_i */
} mt_reduction;

/** Training configuration; start from mt_train_config_init(). */
typedef struct mt_train_config {
    int32_t optimizer;         /**< mt_optimizer */
    int32_t loss;              /**< mt_loss, applied to output 0 */
    int32_t reduction;         /**< mt_reduction */
    int32_t batch_size;        /**< B, rows of every input/target buffer, 1..MT_MAX_BATCH_SIZE */
    int32_t num_trainable_ops; /**< train the last N ops; -1 = all; 0 = none (inference only) */
    int32_t biases_only;       /**< 1: of the trained ops' weights, train only the 1-D ones (biases) */
    float learning_rate;       /**< > 0 */
    float beta1;               /**< Adam: first-moment decay, [0, 1) */
    float beta2;               /**< Adam: second-moment decay, [0, 1) */
    float epsilon;             /**< Adam: added to sqrt(v̂), > 0 */
    float momentum;            /**< SGD: [0, 1), 0 = plain SGD */
    float weight_decay;        /**< >= 0; L2 for SGD and Adam, decoupled for AdamW */
    /** NULL, or one byte per op (num_ops): nonzero trains that op's weights. Overrides
     *  num_trainable_ops. Borrowed: read by mt_plan()/mt_session_init() only. */
    const uint8_t *trainable_op_mask;
    /** 0: apply each weight's update as soon as its gradient is complete (fused update: the
     *  gradients never need to be live all at once; a weight of 16 KiB or more read by one
     *  Dense or Conv2D alone even gets its gradient a block of output rows at a time, one
     *  tile of at most 4 KiB (or one row) in the arena, where that makes the arena smaller:
     *  mt_memory_plan.tiled_updates); 1:
     *  keep gradients for
     *  mt_session_accumulate() / mt_session_optimizer_step(). Both give the same bits. */
    int32_t accumulate_gradients;
    /** The numeric guard never lets an update write a NaN or infinity: an update is refused
     *  (MT_ERR_NUMERIC, counted in mt_session_numeric_errors()) when its gradient has one or
     *  when it would leave a weight or optimizer state element non-finite (lr·g or Adam's
     *  lr / (1 - β1^t) overflowing). The loss is always checked first.
     *  1: every trained tensor's update is checked before any tensor changes, so a refused
     *  step leaves weights, optimizer state, step counter and Adam's bias correction exactly
     *  as they were. This needs all gradients at once and so the accumulate_gradients memory
     *  layout. 0 (with fused updates): each tensor's update is checked just before it is
     *  applied; a refused one stops the step there. A tensor updated in tiles is checked
     *  whole too: every tile's gradient is computed and checked before the first tile is
     *  applied, then computed again for its update (the same bits), so none of its elements
     *  changes when it is refused. The tensors updated before it in that
     *  step keep their update, and the step counter and bias correction have advanced with
     *  the first of them; a step refused before its first update changes none of these. */
    int32_t guard_gradients;
    /** FedProx's proximal term (Li et al., 2020): >= 0, finite; 0 = off. When > 0 the session
     *  trains on L(w) + μ/2·‖w − w_ref‖² over its trained weights: each update adds the
     *  gradient μ·(w − w_ref) to the weight's reduced gradient, element by element, before
     *  weight decay and the optimizer (the update guard checks the result). w_ref is a copy of
     *  the trained weights in the arena (mt_memory_plan.reference_bytes): the image's weights
     *  at init, then whatever mt_session_set_reference() copies (the global model of a
     *  federated round). Checkpoints do not hold it. */
    float proximal_mu;
    /** Sparse update (tiny-training's, Lin et al. 2022): NULL (every trained op trains all its
     *  weights), or one int32 per op (num_ops) saying what a trained op trains: -1 all its
     *  weights; 0 its bias (its 1-D weights) only; k > 0 its bias and the weights of its first
     *  k output channels: rows 0..k-1 of a Dense's [U, I] weight or a Conv2D's [OC, KH, KW, C],
     *  channels 0..k-1 of a DepthwiseConv2D's [1, KH, KW, C] (k = the channel count is all).
     *  Optimizer state exists for the trained channels only, and so, with fused updates, does
     *  a Dense's or Conv2D's gradient: tiles of its first k rows, only those computed, where a
     *  tile (the rows' dW and their dy columns) is smaller than the whole dW; a small layer's
     *  (and a DepthwiseConv2D's) whole dW otherwise. The other channels keep their bits.
     *  The arena holds the whole weight (the kernels read one array), so frozen channels
     *  still cost their arena bytes. Which ops train is still the mask's or num_trainable_ops'.
     *  Refused by mt_plan(): a value below -1, k greater than the op's channel count
     *  (MT_ERR_BAD_ARGUMENT), k > 0 on an op that is not a float Dense, Conv2D or
     *  DepthwiseConv2D or whose weight another op reads too (MT_ERR_UNSUPPORTED);
     *  mt_model_diagnose() names the op. Borrowed: read by mt_plan()/mt_session_init() only. */
    const int32_t *trainable_op_channels;
} mt_train_config;

/**
 * @brief Fill @p cfg (ignored if NULL) with the defaults: SGD, lr 0.01, momentum 0, Adam β1 0.9, β2 0.999, ε 1e-8,
 *        MSE with mean reduction, batch 1, all ops trainable, no proximal term.
 */
MT_API void mt_train_config_init(mt_train_config *cfg);

/* ------------------------------------------------------------------------- */
/* Plan                                                                       */
/* ------------------------------------------------------------------------- */

/**
 * The plan of one image and configuration, as mt_plan() writes it: arena bytes by role (each
 * piece rounded up to MT_ARENA_ALIGN), and what binds the plan to the image and configuration
 * it was made for. Tensors that are never live at the same time share bytes, so
 *     total_bytes = metadata + weights + references + gradients + optimizer + activations
 *                   + activation grads + io + scratch - reuse_bytes.
 * A value: copy it, keep it, hand it to mt_session_init_from_plan(); change nothing in it.
 */
typedef struct mt_memory_plan {
    size_t total_bytes;           /**< the arena size mt_session_init() needs */
    size_t metadata_bytes;        /**< session struct, tensor and op tables */
    size_t weight_bytes;          /**< trained weights (frozen ones stay in the image) */
    size_t gradient_bytes;        /**< gradients of trained weights */
    size_t optimizer_bytes;       /**< momentum / Adam m and v */
    size_t reference_bytes;       /**< the proximal term's copy of the trained weights (proximal_mu > 0) */
    size_t activation_bytes;      /**< inputs and every op output, B rows each */
    size_t activation_grad_bytes; /**< backward temporaries: gradients of activations */
    size_t io_bytes;              /**< target buffer */
    size_t scratch_bytes;         /**< kernel scratch */
    size_t reuse_bytes;           /**< saved by sharing between tensors with disjoint lifetimes */
    size_t lower_bound_bytes;     /**< most bytes live at once over the step's schedule */
    int32_t num_trained_params;   /**< tensors the optimizer updates */
    int32_t first_trained_op;     /**< backward stops here; num_ops when nothing trains */
    int32_t fused_update;         /**< 1: weights update during backward (no accumulation) */
    /** The order in which the greedy placement of the shared buffers took them, of the four
     *  the planner tries (0 largest first, 1 longest-lived, 2 largest size·lifetime, 3 first
     *  born), the one that gave the smallest region (ABI 11; reserved, 0, before): init from
     *  the plan places in this order alone. */
    int32_t placement_order;
    /** Trained weights updated in tiles (ABI 12): with fused updates, a weight of 16 KiB or
     *  more read by one Dense or Conv2D alone gets its gradient a block of output rows
     *  (units, output channels) at a time (one
     *  tile: weight_tile_bytes, counted in gradient_bytes instead of the whole gradient;
     *  every block computed and guarded, then each computed again and applied); the same
     *  bits as the whole gradient, at the cost of computing its dW twice. Only where the
     *  arena is smaller so (the whole gradient may share bytes with activations dead by
     *  then, an int8 backbone's); 0 with accumulate_gradients or guard_gradients (they keep
     *  every gradient whole). */
    int32_t tiled_updates;
    /** The largest such tile, in bytes (ABI 12); 0 when tiled_updates is 0. */
    int32_t weight_tile_bytes;
    /** Frozen int8 convolutions whose output lies over the input they consume (ABI 15): a
     *  stride-1 depthwise in place with a band of rows, a Conv2D or a depthwise streaming its
     *  expansion starting before its input (the plan's buffers say which: in_place_of). Only
     *  where the arena is smaller so (each such pair is placed as one block, which may leave
     *  gaps); 0 when none is. */
    int32_t over_inputs;
    /** The int8 part's share (ABI 8): the most bytes of int8 activations live at once over
     *  the step, int8 model inputs included. Frozen int8 layers that no gradient passes
     *  through keep nothing for a backward (this is then the working set of their forward;
     *  one a gradient passes through keeps its int8 input until its backward); it is part of activation_bytes and of
     *  total_bytes, not added to them. 0 for a model without int8 tensors. */
    size_t int8_activation_bytes;
    /** Frozen pointwise int8 Conv2Ds streamed into their depthwise (a ring of rows) whose two
     *  row kernels keep their channels' constants across the rows (ABI 17): requantizations,
     *  the sums' starts and the depthwise's weights in its kernels' form, made once a layer
     *  call in bytes after the ring where every row made them again. Only where the arena is
     *  no larger so; 0 when none does. */
    int32_t row_constants;
    /* The binding (ABI 11): what mt_session_init_from_plan() checks before it trusts the plan.
     * mt_session_plan() returns a session's plan bound the same way. */
    const void *image;           /**< the image mt_plan() validated: the address it was given */
    size_t image_bytes;          /**< the size it was given */
    uint32_t image_tables_crc32; /**< CRC-32 of the image's header (which holds its CRC-32 of
                                      every byte, verified by mt_plan()) and tensor, op and io
                                      tables */
    uint32_t config_crc32;       /**< CRC-32 of the configuration's values and op mask */
    uint32_t abi_version;        /**< MT_ABI_VERSION of the library that wrote the plan */
    uint32_t seal;               /**< CRC-32 of every byte before it: a plan edited since
                                      mt_plan() wrote it is refused */
} mt_memory_plan;

/**
 * @brief Validate image and config, and compute the exact arena size and its breakdown: the
 *        plan mt_session_init_from_plan() lays the session out from. The image is the
 *        session's from here on: keep it unchanged until the session ends (frozen weights
 *        written through mt_session_param() aside).
 * @param[in]  image       model image (4-byte aligned), see mt_model_check()
 * @param[in]  image_bytes size of @p image
 * @param[in]  cfg         training configuration
 * @param[out] plan        the byte breakdown, bound to @p image, @p image_bytes and @p cfg
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, bad config value), MT_ERR_BAD_MODEL,
 *         MT_ERR_SHAPE (loss does not fit output 0), MT_ERR_UNSUPPORTED (an op this build
 *         lacks, or an arena the planner cannot lay out: its shared buffers past 4 GiB,
 *         or more bytes than size_t holds on this target).
 */
MT_API mt_status mt_plan(const void *image, size_t image_bytes, const mt_train_config *cfg,
                         mt_memory_plan *plan);

/** What an arena buffer holds (mt_buffer_info.kind). */
enum {
    MT_BUFFER_METADATA = 0,   /**< session struct and tables */
    MT_BUFFER_WEIGHT = 1,     /**< a trained weight's arena copy */
    MT_BUFFER_GRADIENT = 2,   /**< a weight's or an activation's gradient */
    MT_BUFFER_OPTIMIZER = 3,  /**< momentum / Adam moments */
    MT_BUFFER_ACTIVATION = 4, /**< an activation (input, op output) */
    MT_BUFFER_TARGET = 5,     /**< the loss's targets */
    MT_BUFFER_SCRATCH = 6,
    MT_BUFFER_REFERENCE = 7   /**< a trained weight's reference copy (proximal_mu > 0) */
};

/**
 * One buffer of the arena plan. Times index the train step's schedule over O ops:
 * 0 before the step, 1 + o the forward of op o, O + 1 the loss, 2·O + 1 - o the
 * backward of op o; a buffer is live over [start, end]. Buffers that live across
 * steps span [0, 2·O + 1].
 */
typedef struct mt_buffer_info {
    int32_t kind;         /**< MT_BUFFER_* */
    int32_t tensor_index; /**< the tensor it belongs to, -1 for metadata, target, scratch */
    int32_t start, end;   /**< lifetime over the schedule */
    int32_t in_place_of;  /**< the tensor whose bytes (its group's) this one shares, in place or overlapped, or -1 */
    int32_t reserved;
    size_t offset;        /**< from the arena's start */
    size_t bytes;
} mt_buffer_info;

/** Receives each buffer of a plan; return MT_OK to go on. */
typedef mt_status (*mt_buffer_fn)(void *user, const mt_buffer_info *buffer);

/**
 * @brief The plan of mt_plan(), buffer by buffer (offsets and lifetimes), for tools that
 *        draw or audit the arena. Same arguments and statuses as mt_plan(), plus what
 *        @p report returns.
 */
MT_API mt_status mt_plan_buffers(const void *image, size_t image_bytes, const mt_train_config *cfg,
                                 mt_buffer_fn report, void *user);

/**
 * @brief Why an image (and configuration) is refused: the validation of mt_plan() again, or
 *        of mt_model_check() when @p cfg is NULL, telling where the first failure lies.
 *
 * An op's failing check (operands, shape rules, an op type this build lacks: see
 * mt_op_built()) gives its index and type; a bad tensor entry, io entry or operand gives the
 * tensor; a bad header or configuration gives neither (-1); a loss that does not fit gives
 * output 0's tensor. Costs what mt_plan() costs.
 * @param[in]  image       model image (4-byte aligned)
 * @param[in]  image_bytes size of @p image
 * @param[in]  cfg         training configuration, or NULL to check the image alone
 * @param[out] detail      the first failure, or {MT_OK, -1, 0, -1}
 * @return detail->status: what mt_plan() (mt_model_check()) returns for the same arguments;
 *         MT_ERR_BAD_ARGUMENT with nothing written when @p detail is NULL.
 */
MT_API mt_status mt_model_diagnose(const void *image, size_t image_bytes, const mt_train_config *cfg,
                                   mt_error_detail *detail);

#ifdef __cplusplus
}
#endif

/* The session: init on an arena, its buffers, the steps, hyper-parameters and weights. */
#include "microtrain_session.h"
/* Checkpoints (weights, optimizer state, counters, properties) and export, streamed. */
#include "microtrain_checkpoint.h"
/* Power-loss-safe A/B checkpoint slots in flash, built on the checkpoint API. */
#include "microtrain_storage.h"

#endif /* MICROTRAIN_H */
