/* px_export_formats.h — the file formats of px_export (one writer a
 * target); px_export.c checks the plan against the target first. */
#ifndef PX_EXPORT_FORMATS_H
#define PX_EXPORT_FORMATS_H

#include "px_export.h"

/* What a format cannot express although the framework runs it in general
 * (a split Megatron cannot name, ZeRO-2/3 beside DeepSpeed's pipeline...). */
px_status px_export_format_check(const px_plan *plan, px_export_target t, px_error *err);

px_status px_export_megatron(const px_plan *plan, const px_export_opts *o, px_buf *b,
                             px_error *err);
px_status px_export_nemo(const px_plan *plan, px_buf *b, px_error *err);
px_status px_export_torchtitan(const px_plan *plan, px_buf *b, px_error *err);
px_status px_export_deepspeed(const px_plan *plan, px_buf *b, px_error *err);
px_status px_export_slurm(const px_plan *plan, const px_export_opts *o, px_buf *b,
                          px_error *err);

#endif
