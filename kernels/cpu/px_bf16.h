/* px_bf16.h — bf16 storage on the host: the conversions the CPU backend's
 * bf16 mode and the engine's host reads use.
 *
 * bf16 is the upper half of an IEEE fp32 (1 sign, 8 exponent, 7 mantissa
 * bits), so widening is exact and narrowing is a rounding.  Narrowing rounds
 * to nearest, ties to even (as __float2bfloat16_rn on the GPU), keeps
 * infinities, and keeps NaN a (quiet) NaN instead of letting the rounding
 * carry it into an infinity. */
#ifndef PX_BF16_H
#define PX_BF16_H

#include <stdint.h>

/* Storage of one bf16 value (the same bits as __nv_bfloat16 and as px_bf16 of
 * kernels/cuda/px_kernels_cuda.h; C11 allows the repeated typedef). */
typedef uint16_t px_bf16;

float px_bf16_to_f32(px_bf16 b);
px_bf16 px_f32_to_bf16(float f);

/* out[i] = in[i] widened (exact) / rounded; out and in must not overlap. */
void px_bf16_widen(float *out, const px_bf16 *in, int64_t n);
void px_bf16_round(px_bf16 *out, const float *in, int64_t n);

#endif
