/* px_fp8_accum.c — split-accumulator FP8 gradient GEMMs (px_fp8_accum.h). */
#include "px_fp8_accum.h"

#include <stdbool.h>

double px_fp8_grad_gemm_factor(const px_hw *hw, px_precision p)
{
    if (!hw || (p != PX_PREC_FP8 && p != PX_PREC_FP8_CS && p != PX_PREC_FP8_ROWWISE))
        return 1.0;
    bool reduced_accumulator = hw->fp8_flops > 0.0 && !(hw->mxfp8_flops > 0.0);
    return reduced_accumulator ? PX_FP8_SPLIT_ACCUM_SLOWDOWN : 1.0;
}
