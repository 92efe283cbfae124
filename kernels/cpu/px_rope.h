/* px_rope.h — the rotary position embedding's frequencies, shared by the CPU
 * kernel and its CUDA twin (the same arithmetic, in double, on both).
 *
 * Pair i of a head of width HD (i < HD/2) turns by pos * inv_freq(i), with
 * inv_freq(i) = theta^(-2i/HD), then rescaled by the model's rope_scaling:
 * Llama 3's ("llama3": wavelengths longer than original_max_positions /
 * low_freq_factor are slowed by `factor`, shorter than original_max_positions /
 * high_freq_factor kept, the band between blended linearly in
 * original_max_positions / wavelength), as Hugging Face transformers'
 * _compute_llama3_parameters and Meta's reference apply it.
 *
 * The pair is (i, i + HD/2) ("rotate half", Llama, Qwen, Mistral) or
 * (2i, 2i + 1) when interleaved (DeepSeek-V2/V3 MLA's rope slice). */
#ifndef PX_ROPE_H
#define PX_ROPE_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PX_ROPE_FN static inline __host__ __device__
#else
#define PX_ROPE_FN static inline
#endif

typedef enum { PX_ROPE_SCALE_NONE = 0, PX_ROPE_SCALE_LLAMA3 = 1 } px_rope_scale;

typedef struct {
    double theta;           /* base of the frequencies (rope_theta) */
    int interleaved;        /* 1: pairs (2i, 2i + 1); 0: (i, i + HD/2) */
    int scale;              /* px_rope_scale */
    double factor, low_freq_factor, high_freq_factor; /* llama3 */
    double original_max_positions;                    /* llama3 */
} px_rope;

/* The unscaled RoPE of base theta, rotate-half pairs. */
PX_ROPE_FN px_rope px_rope_plain(double theta)
{
    px_rope r = {theta, 0, PX_ROPE_SCALE_NONE, 1.0, 1.0, 1.0, 0.0};
    return r;
}

/* Radians per position of pair i (0 <= i < HD/2). */
PX_ROPE_FN double px_rope_inv_freq(const px_rope *r, int64_t i, int64_t HD)
{
    double f = pow(r->theta, -2.0 * (double)i / (double)HD);
    if (r->scale != PX_ROPE_SCALE_LLAMA3)
        return f;
    const double two_pi = 6.283185307179586;
    double wavelen = two_pi / f;
    double low_wavelen = r->original_max_positions / r->low_freq_factor;
    double high_wavelen = r->original_max_positions / r->high_freq_factor;
    if (wavelen < high_wavelen)
        return f; /* high frequencies: unchanged */
    if (wavelen > low_wavelen)
        return f / r->factor; /* low frequencies: slowed by factor */
    double t = (r->original_max_positions / wavelen - r->low_freq_factor) /
               (r->high_freq_factor - r->low_freq_factor);
    return (1.0 - t) * f / r->factor + t * f;
}

/* Offsets of pair i's two elements inside a head. */
PX_ROPE_FN void px_rope_pair(const px_rope *r, int64_t i, int64_t HD, int64_t *a, int64_t *b)
{
    *a = r->interleaved ? 2 * i : i;
    *b = r->interleaved ? 2 * i + 1 : i + HD / 2;
}

#endif
