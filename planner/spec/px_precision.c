/* px_precision.c — names of the GEMM number formats (px_precision.h). */
#include "px_precision.h"

#include <string.h>

static const char *const precision_names[PX_PREC_COUNT] = {
    "bf16", "fp16", "fp8", "fp8-cs", "fp8-rowwise", "fp8-block", "mxfp8", "nvfp4"};

const char *px_precision_name(px_precision p)
{
    return (p >= 0 && p < PX_PREC_COUNT) ? precision_names[p] : "?";
}

px_status px_precision_parse(const char *s, px_precision *out, px_error *err)
{
    for (int i = 0; s && i < PX_PREC_COUNT; i++)
        if (strcmp(s, precision_names[i]) == 0) {
            *out = (px_precision)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID,
                   "precision \"%s\": allowed values are bf16, fp16, fp8, fp8-cs, fp8-rowwise, "
                   "fp8-block, mxfp8, nvfp4",
                   s ? s : "(null)");
}
