/* px_precision.h — the number format of the training step's GEMMs.
 *   bf16, fp16    16-bit storage and GEMMs (fp16 with loss scaling)
 *   fp8           FP8 with per-tensor delayed scaling (Transformer Engine's default recipe)
 *   fp8_cs        FP8 with per-tensor current scaling
 *   fp8_rowwise   FP8 with one scale per row
 *   fp8_block     FP8 with 1x128 activation / 128x128 weight block scales (DeepSeek-V3)
 *   mxfp8         OCP MX FP8: 32-element blocks with E8M0 scales
 *   nvfp4         NVFP4: 16-element blocks with FP8 scales
 * Parsed from and printed as "bf16", "fp16", "fp8", "fp8-cs", "fp8-rowwise",
 * "fp8-block", "mxfp8", "nvfp4". */
#ifndef PX_PRECISION_H
#define PX_PRECISION_H

#include "px_error.h"

typedef enum {
    PX_PREC_BF16 = 0,
    PX_PREC_FP16,
    PX_PREC_FP8,
    PX_PREC_FP8_CS,
    PX_PREC_FP8_ROWWISE,
    PX_PREC_FP8_BLOCK,
    PX_PREC_MXFP8,
    PX_PREC_NVFP4,
    PX_PREC_COUNT
} px_precision;

/* Bit of a precision in a capability mask (px_caps.precisions). */
#define PX_PREC_BIT(p) (1u << (unsigned)(p))
#define PX_PREC_ALL ((1u << PX_PREC_COUNT) - 1u)

const char *px_precision_name(px_precision p);
px_status px_precision_parse(const char *s, px_precision *out, px_error *err);

#endif
