/* px_bf16.c — fp32 <-> bf16 on the host (px_bf16.h). */
#include "px_bf16.h"

#include <string.h>

float px_bf16_to_f32(px_bf16 b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

px_bf16 px_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (px_bf16)((u >> 16) | 0x0040u); /* NaN: keep it, quiet */
    /* Round to nearest even: add 0x7fff plus the lowest kept bit, so an exact
     * half rounds up only when that makes the kept part even. */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (px_bf16)(u >> 16);
}

void px_bf16_widen(float *out, const px_bf16 *in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = px_bf16_to_f32(in[i]);
}

void px_bf16_round(px_bf16 *out, const float *in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = px_f32_to_bf16(in[i]);
}
