/*
 * The x86-64 kernels' prototypes, once for each build of them (included by ops/x86/x86.h
 * only, twice: MT_X86_DECL(name) is name##_avx512, then name##_avx2). No include guard.
 */
/* Dense: ops/ops.h's mt_op_dense_f32_forward / _backward, same parameters. */
void MT_X86_DECL(mt_op_dense_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                    uint32_t B, uint32_t I, uint32_t U);
void MT_X86_DECL(mt_op_dense_f32_backward)(const float *x, const float *w, const float *dy, float *dx,
                                     float *dw, float *dbias, uint32_t B, uint32_t I, uint32_t U, int dw_zero);
/* mt_op_bias_f32_backward */
void MT_X86_DECL(mt_op_bias_f32_backward)(const float *dy, float *dbias, size_t P, uint32_t C);
/* ReLU, ops/ops.h's parameters */
void MT_X86_DECL(mt_op_relu_f32_forward)(const float *x, float *y, size_t N);
void MT_X86_DECL(mt_op_relu_f32_backward)(const float *y, const float *dy, float *dx, size_t N);
/* mt_all_finitef (mt_math.h) */
int MT_X86_DECL(mt_all_finitef)(const float *x, size_t n);
/* out[j] = mt_expf(x[j] - m) for j < n (exp_x86.c) */
void MT_X86_DECL(mt_expf_shifted)(const float *x, float m, float *out, uint32_t n);
/* mt_fused_activation_forward / _backward (spatial.h) */
void MT_X86_DECL(mt_fused_activation_forward)(uint32_t activation, float *y, size_t N);
void MT_X86_DECL(mt_fused_activation_backward)(uint32_t activation, const float *y, float *dy, size_t N);

/* Convolutions and max pooling: ops/ops.h's kernels, same parameters. */
void MT_X86_DECL(mt_op_conv2d_f32_forward)(const float *x, const float *w, const float *bias, float *y, uint32_t B,
                                     const struct mt_spatial *g);
void MT_X86_DECL(mt_op_conv2d_f32_backward)(const float *x, const float *w, const float *y, float *dy, float *dx,
                                      float *dw, float *dbias, uint32_t B, const struct mt_spatial *g);
void MT_X86_DECL(mt_op_depthwise_conv2d_f32_forward)(const float *x, const float *w, const float *bias, float *y,
                                               uint32_t B, const struct mt_spatial *g);
void MT_X86_DECL(mt_op_depthwise_conv2d_f32_backward)(const float *x, const float *w, const float *y, float *dy,
                                                float *dx, float *dw, float *dbias, uint32_t B,
                                                const struct mt_spatial *g);
void MT_X86_DECL(mt_op_max_pool2d_f32_forward)(const float *x, float *y, uint32_t B, const struct mt_spatial *g);
void MT_X86_DECL(mt_op_max_pool2d_f32_backward)(const float *x, const float *y, const float *dy, float *dx, uint32_t B,
                                          const struct mt_spatial *g);

/* Optimizers (optimizers.h), same parameters. */
void MT_X86_DECL(mt_sgd_update_f32)(float *w, const float *g, float *buf, size_t N, float lr, float momentum,
                              float weight_decay, float grad_scale);
void MT_X86_DECL(mt_adam_update_f32)(float *w, const float *g, float *m, float *v, size_t N, float lr,
                               float beta1, float beta2, float epsilon, float weight_decay, int decoupled,
                               double beta1_power, double beta2_power, float grad_scale);
/* The update guards of optimizers.h without a proximal term (the same operations, nothing written). */
int MT_X86_DECL(mt_sgd_update_is_finite_f32)(const float *w, const float *g, const float *buf, size_t N, float lr,
                                       float momentum, float weight_decay, float grad_scale);
int MT_X86_DECL(mt_adam_update_is_finite_f32)(const float *w, const float *g, const float *m, const float *v, size_t N,
                                        float lr, float beta1, float beta2, float epsilon, float weight_decay,
                                        int decoupled, double beta1_power, double beta2_power, float grad_scale);
