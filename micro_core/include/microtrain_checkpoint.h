/**
 * @file microtrain_checkpoint.h
 * @brief Checkpoints and export for inference (part of microtrain.h, which includes it).
 *
 * A checkpoint holds the trained weights, the optimizer state (optional), the step and epoch
 * counters, the learning rates and user properties: versioned, little-endian, CRC-32
 * protected (docs/checkpoint_format.md). It is written and read in small chunks through
 * callbacks, so a device can stream it to and from flash without holding it in RAM; the
 * *_buffer forms do the same through a memory buffer.
 */
/* microtrain.h first: it includes this file at its end, before microtrain_storage.h, which
 * builds on it; a program that includes only this one still gets the whole API, in order */
#include "microtrain.h"

#ifndef MICROTRAIN_CHECKPOINT_H
#define MICROTRAIN_CHECKPOINT_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Checkpoints and export (streamed: nothing needs the whole file in RAM)     */
/* ------------------------------------------------------------------------- */

/** Longest property name and string value, in bytes (a loading device holds one of each on
 *  its stack). */
#define MT_PROPERTY_MAX_NAME 63
#define MT_PROPERTY_MAX_STRING 255

/** Kinds of user property stored in a checkpoint. */
enum { MT_PROPERTY_INT = 1, MT_PROPERTY_FLOAT = 2, MT_PROPERTY_STRING = 3 };

/** A named user property (ONNX Runtime's checkpoint properties). */
typedef struct mt_property {
    const char *name;      /**< NUL-terminated, 1..MT_PROPERTY_MAX_NAME bytes */
    int32_t type;          /**< MT_PROPERTY_* */
    int32_t reserved;
    int64_t int_value;     /**< MT_PROPERTY_INT */
    double float_value;    /**< MT_PROPERTY_FLOAT */
    const char *str_value; /**< MT_PROPERTY_STRING: NUL-terminated, <= MT_PROPERTY_MAX_STRING bytes */
} mt_property;

/** Append @p bytes to the output (a file, a flash region). Return MT_OK or MT_ERR_IO. */
typedef mt_status (*mt_write_fn)(void *user, const void *data, size_t bytes);
/** Read @p bytes at @p offset of the checkpoint. Return MT_OK or MT_ERR_IO. */
typedef mt_status (*mt_read_fn)(void *user, size_t offset, void *data, size_t bytes);
/** Receive one property while a checkpoint loads; pointers are valid during the call only. */
typedef mt_status (*mt_property_fn)(void *user, const mt_property *property);

/**
 * @brief Size in bytes of the checkpoint mt_checkpoint_save() would write.
 * @param[in] include_optimizer 1: also momentum / Adam moments and bias-correction state
 */
MT_API mt_status mt_checkpoint_bytes(const mt_session *s, int32_t include_optimizer,
                                     const mt_property *properties, int32_t num_properties,
                                     size_t *bytes);

/**
 * @brief Stream a checkpoint: trained weights, optimizer state (optional; with it, a session
 *        with a proximal term also saves its reference w_ref, as version 3), step and epoch
 *        counters, current and base learning rate and user properties; versioned,
 *        little-endian, CRC-32 protected (format: docs/checkpoint_format.md, version 2, or 3
 *        with the reference, or 4 for a session whose int8 layers train in place: their int8
 *        weights, int32 biases and float master copies at their own width). @p write is
 *        called with small chunks.
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, bad property), MT_ERR_IO (from @p write).
 */
MT_API mt_status mt_checkpoint_save(const mt_session *s, int32_t include_optimizer,
                                    const mt_property *properties, int32_t num_properties,
                                    mt_write_fn write, void *user);

/**
 * @brief Load a checkpoint of @p checkpoint_bytes bytes through @p read.
 *
 * The whole checkpoint is validated first: structure, CRC, and contents no training run
 * could produce (NaN or infinite weights, optimizer state or reference, a negative Adam second moment,
 * β powers outside [0, 1], negative counters, a NaN, infinite or negative learning rate)
 * are MT_ERR_BAD_CHECKPOINT; another model fingerprint, trained tensor set or optimizer
 * (with or without stored state) is MT_ERR_CHECKPOINT_MISMATCH. Only then are weights,
 * state and counters replaced and @p on_property (may be NULL) called for each property.
 * A version 4 record whose layout no writer sets (an unknown dtype, a master copy of
 * anything but an int8 weight) or whose master copy is outside [-128, 127] or does not round
 * to its int8 weight is MT_ERR_BAD_CHECKPOINT; a version 1-3 (f32) checkpoint of a session
 * training int8 layers in place is MT_ERR_CHECKPOINT_MISMATCH, and so is one whose values of
 * the rows a sparse update leaves in the image (a float layer's output channels from k on,
 * mt_param_info.held) differ from the image's: the session reads those in place and cannot
 * write them.
 * Versions 1 to 4 load; versions 2 to 4 also restore the base learning rate
 * (mt_session_get_base_learning_rate()), version 3 the proximal term's reference (a session
 * without the term skips it; a checkpoint without one leaves the session's). A checkpoint refused by
 * validation (MT_ERR_BAD_CHECKPOINT, MT_ERR_CHECKPOINT_MISMATCH, or MT_ERR_IO while
 * validating) leaves the session unchanged. The second pass reads in place, holding no
 * copy: if @p read fails there (storage failing between the passes) or @p on_property
 * returns an error, the status is returned with the session partly or wholly loaded;
 * load again. A checkpoint without optimizer state restarts the optimizer (zero
 * moments, fresh bias correction) but restores weights and counters.
 * @return MT_OK, MT_ERR_BAD_CHECKPOINT, MT_ERR_CHECKPOINT_MISMATCH, MT_ERR_IO,
 *         MT_ERR_BAD_ARGUMENT, or what @p on_property returned.
 */
MT_API mt_status mt_checkpoint_load(mt_session *s, size_t checkpoint_bytes, mt_read_fn read,
                                    void *user, mt_property_fn on_property, void *property_user);

/**
 * @brief mt_checkpoint_save() into a memory buffer, for hosts that cannot pass C callbacks
 *        (WebAssembly) and for RAM or memory-mapped flash: the same bytes.
 * @param[out] buffer   receives the checkpoint; must not overlap the session's arena or image
 * @param[in]  capacity bytes @p buffer holds, >= mt_checkpoint_bytes() of the same arguments
 * @param[out] written  the checkpoint's size in bytes (may be NULL)
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (as mt_checkpoint_save(), or @p buffer NULL, overlapping,
 *         or @p capacity too small: then nothing is promised about the buffer's contents),
 *         MT_ERR_UNSUPPORTED (a checkpoint over 4 GiB).
 */
MT_API mt_status mt_checkpoint_save_buffer(const mt_session *s, int32_t include_optimizer,
                                           const mt_property *properties, int32_t num_properties,
                                           void *buffer, size_t capacity, size_t *written);

/**
 * @brief mt_checkpoint_load() of the @p checkpoint_bytes bytes at @p checkpoint (RAM or
 *        memory-mapped flash; no alignment needed), with the same validation and guarantees.
 * @param[in] checkpoint must not overlap the session's arena
 * @return as mt_checkpoint_load(); MT_ERR_BAD_ARGUMENT also for @p checkpoint NULL or overlapping.
 */
MT_API mt_status mt_checkpoint_load_buffer(mt_session *s, const void *checkpoint, size_t checkpoint_bytes,
                                           mt_property_fn on_property, void *property_user);

/**
 * @brief Stream the model image with the trained weights baked in (CRC updated): an
 *        inference image with no training state, loadable by mt_session_init().
 *        Its size is the input image's size.
 * @return MT_OK, MT_ERR_BAD_ARGUMENT, MT_ERR_IO.
 */
MT_API mt_status mt_session_export_image(const mt_session *s, mt_write_fn write, void *user);

/**
 * @brief mt_session_export_image() into a memory buffer: the same bytes.
 * @param[out] buffer   receives the image; must not overlap the session's arena or image
 * @param[in]  capacity bytes @p buffer holds, >= the model image's size
 * @param[out] written  the image's size in bytes (may be NULL)
 * @return MT_OK, MT_ERR_BAD_ARGUMENT (NULL, overlapping, or @p capacity too small: then
 *         nothing is promised about the buffer's contents).
 */
MT_API mt_status mt_session_export_image_buffer(const mt_session *s, void *buffer, size_t capacity,
                                                size_t *written);

#ifdef __cplusplus
}
#endif

#endif /* MICROTRAIN_CHECKPOINT_H */
