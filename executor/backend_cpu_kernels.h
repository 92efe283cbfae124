/* backend_cpu_kernels.h — the CPU backend's kernel tables and the failure
 * its bf16 wrappers leave (backend_cpu_kernels.c); used by backend_cpu.c
 * only. */
#ifndef BACKEND_CPU_KERNELS_H
#define BACKEND_CPU_KERNELS_H

#include "px_backend.h"

/* The kernels of fp32 and of bf16 storage, from the one list PX_KERNEL_LIST. */
extern const px_kernels cpu_kernels_f32;
extern const px_kernels cpu_kernels_bf16;

/* The error a bf16 kernel wrapper left (px_status once, then cleared): the
 * kernels return nothing, so the next sync or collective returns it. */
px_status take_sticky(px_error *err);

#endif
