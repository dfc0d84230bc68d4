/*
 * Losses over the n valid rows of a step (rows past n are never read).
 * Conventions (Keras/onert): a sample's loss is the mean over its D elements
 * for MSE, MAE and BCE, the sum over classes for cross-entropy; the reduction
 * then averages (MEAN) or adds (SUM) the n sample losses. With MEAN the
 * gradient of every sample carries the factor 1/n. Sums run in ascending
 * index order.
 */
#include "losses.h"

#include <math.h>

#include "mt_math.h"

/* PyTorch clamps log terms of BCE at -100 so that p = 0 or 1 gives a finite loss. */
#define LOG_FLOOR (-100.0f)
/* Smallest probability whose log and reciprocal are taken by the unfused CCE. */
#define PROB_FLOOR 1e-12f

static float clamped_log(float p)
{
    float l = mt_logf(p);
    return l > LOG_FLOOR ? l : LOG_FLOOR;
}

static float reduction_scale(int reduction, uint32_t n)
{
    return reduction == MT_REDUCTION_MEAN ? 1.0f / (float)n : 1.0f;
}

/* Σ over n samples of a per-sample loss, then the reduction. */
static float reduce(float total, int reduction, uint32_t n)
{
    return reduction == MT_REDUCTION_MEAN ? total / (float)n : total;
}

static mt_status check_labels(const int32_t *labels, uint32_t n, uint32_t D)
{
    for (uint32_t i = 0; i < n; ++i)
        if (labels[i] < 0 || (uint32_t)labels[i] >= D) return MT_ERR_BAD_ARGUMENT;
    return MT_OK;
}

mt_status mt_loss_f32(int loss, int reduction, const float *p, const void *target, float *dp,
                      uint32_t n, uint32_t D, float *loss_out)
{
    const float scale = reduction_scale(reduction, n);
    const float *y = (const float *)target;
    const int32_t *labels = (const int32_t *)target;
    float total = 0.0f;

    if (loss == MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY) {
        mt_status st = check_labels(labels, n, D);
        if (st != MT_OK) return st;
    }
    for (uint32_t i = 0; i < n; ++i) {
        const float *pi = p + (size_t)i * D, *yi = y + (size_t)i * D;
        float *dpi = dp ? dp + (size_t)i * D : NULL;
        float sample = 0.0f;
        switch (loss) {
        case MT_LOSS_MSE: /* mean_d (p-y)²;  ∂/∂p = 2(p-y)/D */
            for (uint32_t d = 0; d < D; ++d) {
                float e = pi[d] - yi[d];
                sample += e * e;
                if (dpi) dpi[d] += (2.0f * e / (float)D) * scale;
            }
            sample /= (float)D;
            break;
        case MT_LOSS_MAE: /* mean_d |p-y|;  ∂/∂p = sign(p-y)/D, 0 at 0 */
            for (uint32_t d = 0; d < D; ++d) {
                float e = pi[d] - yi[d];
                sample += fabsf(e);
                if (dpi && e != 0.0f) dpi[d] += ((e > 0.0f ? 1.0f : -1.0f) / (float)D) * scale;
            }
            sample /= (float)D;
            break;
        case MT_LOSS_CATEGORICAL_CROSSENTROPY: /* -Σ y log p;  ∂/∂p = -y/p */
            for (uint32_t d = 0; d < D; ++d) {
                float pc = pi[d] > PROB_FLOOR ? pi[d] : PROB_FLOOR;
                sample -= yi[d] * mt_logf(pc);
                if (dpi) dpi[d] += (-yi[d] / pc) * scale;
            }
            break;
        case MT_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY: { /* -log p[label] */
            uint32_t c = (uint32_t)labels[i];
            float pc = pi[c] > PROB_FLOOR ? pi[c] : PROB_FLOOR;
            sample = -mt_logf(pc);
            if (dpi) dpi[c] += (-1.0f / pc) * scale;
            break;
        }
        case MT_LOSS_BINARY_CROSSENTROPY:
            /* mean_d -(y log p + (1-y) log(1-p));  ∂/∂p = (p-y) / (p(1-p)) / D */
            for (uint32_t d = 0; d < D; ++d) {
                float pd = pi[d];
                sample -= yi[d] * clamped_log(pd) + (1.0f - yi[d]) * clamped_log(1.0f - pd);
                if (dpi) {
                    float denom = pd * (1.0f - pd);
                    if (denom < PROB_FLOOR) denom = PROB_FLOOR;
                    dpi[d] += ((pd - yi[d]) / denom / (float)D) * scale;
                }
            }
            sample /= (float)D;
            break;
        default:
            return MT_ERR_BAD_ARGUMENT;
        }
        total += sample;
    }
    *loss_out = reduce(total, reduction, n);
    return MT_OK;
}

mt_status mt_loss_softmax_cce_f32(int sparse, int reduction, const float *z, float *p, const void *target,
                                  float *dz, uint32_t n, uint32_t D, float *loss_out)
{
    const float scale = reduction_scale(reduction, n);
    const float *y = (const float *)target;
    const int32_t *labels = (const int32_t *)target;
    float total = 0.0f;
    if (sparse) {
        mt_status st = check_labels(labels, n, D);
        if (st != MT_OK) { /* nothing of dz written; p still the softmax of z, as documented */
            float m;
            for (uint32_t i = 0; i < n; ++i) (void)mt_softmax_row(z + (size_t)i * D, p + (size_t)i * D, D, &m);
            return st;
        }
    }
    for (uint32_t i = 0; i < n; ++i) {
        const float *zi = z + (size_t)i * D, *yi = y + (size_t)i * D;
        float *pi = p + (size_t)i * D;
        /* log p_d = z_d - m - log Σ_k e^(z_k - m): finite even where p_d underflows to 0; the
         * softmax is computed once a step, here (the op's own row function), not again in its op */
        float m;
        const float log_sum = mt_logf(mt_softmax_row(zi, pi, D, &m));
        if (sparse) {
            uint32_t c = (uint32_t)labels[i];
            total += -(zi[c] - m - log_sum);
            if (dz) {
                float *dzi = dz + (size_t)i * D;
                for (uint32_t d = 0; d < D; ++d)
                    dzi[d] += (d == c ? pi[d] - 1.0f : pi[d]) * scale;
            }
        } else {
            float sample = 0.0f, y_sum = 0.0f;
            for (uint32_t d = 0; d < D; ++d) {
                sample -= yi[d] * (zi[d] - m - log_sum);
                y_sum += yi[d];
            }
            total += sample;
            /* ∂/∂z_d (-Σ_k y_k log p_k) = p_d Σ_k y_k - y_d, which is p - y for one-hot y */
            if (dz) {
                float *dzi = dz + (size_t)i * D;
                for (uint32_t d = 0; d < D; ++d) dzi[d] += (pi[d] * y_sum - yi[d]) * scale;
            }
        }
    }
    *loss_out = reduce(total, reduction, n);
    return MT_OK;
}

mt_status mt_loss_sigmoid_bce_f32(int reduction, const float *z, const float *p, const float *y,
                                  float *dz, uint32_t n, uint32_t D, float *loss_out)
{
    const float scale = reduction_scale(reduction, n);
    float total = 0.0f;
    for (uint32_t i = 0; i < n; ++i) {
        const float *zi = z + (size_t)i * D, *pi = p + (size_t)i * D, *yi = y + (size_t)i * D;
        float sample = 0.0f;
        for (uint32_t d = 0; d < D; ++d) {
            /* -(y log σ(z) + (1-y) log(1-σ(z))) = max(z,0) - z·y + log(1 + e^-|z|) */
            float zd = zi[d];
            float relu = zd > 0.0f ? zd : 0.0f;
            sample += relu - zd * yi[d] + mt_logf(1.0f + mt_expf(-fabsf(zd)));
            if (dz) dz[(size_t)i * D + d] += ((pi[d] - yi[d]) / (float)D) * scale;
        }
        total += sample / (float)D;
    }
    *loss_out = reduce(total, reduction, n);
    return MT_OK;
}
