/* attention_bench.cu — FlashAttention-style causal attention of the CUDA
 * backend, forward + backward, at long sequences and head dim 128:
 * achieved TFLOP/s against the device's dense bf16 peak (goal >= 50%).
 *
 *   attention_bench [--quick] [--peak TFLOPS] [--batch B] [--heads H] [--kv-heads K]
 *
 * FLOPs are the causal work actually done, the FlashAttention papers'
 * convention: forward 4 S^2 D H B / 2 (QK^T and PV, half the pairs), backward
 * 2.5x forward.  (The executor's MFU counts the non-causal 12 s a d per token
 * of px_flops.h instead, as the published Megatron numbers do.)  Exits 77
 * without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "px_cuda_status.h"
#include "px_kernels_cuda.h"

/* The untyped device buffers as either storage type. */
#define F(p) (static_cast<float *>(p))
#define H(p) (static_cast<px_bf16 *>(p))

static double peak_for(const char *name)
{
    /* dense bf16 tensor-core peaks, TFLOP/s (datasheets) */
    if (strstr(name, "H100") || strstr(name, "H200") || strstr(name, "H800") ||
        strstr(name, "GH200"))
        return 989.0;
    if (strstr(name, "B200") || strstr(name, "GB200"))
        return 2250.0;
    if (strstr(name, "A100") || strstr(name, "A800"))
        return 312.0;
    if (strstr(name, "L40S"))
        return 362.0;
    return 0.0;
}

static int check(px_status st, const px_error *err)
{
    if (st == PX_OK)
        return 0;
    char buf[1600];
    px_error_format(err, buf, sizeof buf);
    fprintf(stderr, "attention_bench: %s\n", buf);
    return 1;
}

int main(int argc, char **argv)
{
    int quick = 0, B = 2, NH = 32, NKV = 8;
    double peak = 0.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc)
            peak = atof(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            B = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heads") && i + 1 < argc)
            NH = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kv-heads") && i + 1 < argc)
            NKV = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: attention_bench [--quick] [--peak TFLOPS] [--batch B] "
                            "[--heads H] [--kv-heads K]\n");
            return 2;
        }
    }
    if (B < 1 || NH < 1 || NKV < 1 || NH % NKV) {
        fprintf(stderr, "attention_bench: need B, H, K >= 1 and K dividing H\n");
        return 2;
    }
    if (px_cuda_device_count() <= 0) {
        printf("# attention_bench: no CUDA device: skipped\n");
        return 77;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    if (peak <= 0.0)
        peak = peak_for(prop.name);
    const int HD = 128, reps = quick ? 3 : 10;
    const int seqs[] = {2048, 4096, 8192, 16384};
    const int first = quick ? 1 : 0, last = quick ? 2 : 3;
    printf("# attention fwd+bwd, causal, head dim %d, batch %d, heads %d (kv %d), %s\n", HD, B,
           NH, NKV, prop.name);
    printf("# peak %.0f TFLOP/s dense bf16%s; %d timed repetitions after 2 warm-up\n", peak,
           peak > 0 ? "" : " (unknown: pass --peak)", reps);
    printf("# units: ms per call; TFLOP/s of the causal work (fwd 2 S^2 D H B, bwd 2.5 x fwd)\n");
    printf("%-7s %6s %9s %9s %8s %8s %9s %7s\n", "storage", "seq", "fwd_ms", "bwd_ms", "fwd_TF",
           "bwd_TF", "total_TF", "%peak");
    px_error err;
    px_error_clear(&err);
    cudaEvent_t t0, t1, t2;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    cudaEventCreate(&t2);
    for (int f32 = 0; f32 < 2; f32++)
        for (int si = first; si <= last; si++) {
            int64_t S = seqs[si], W = (int64_t)(NH + 2 * NKV) * HD;
            size_t el = f32 ? 4 : 2;
            size_t nq = (size_t)(S * B * W), no = (size_t)(S * B * NH * HD);
            void *qkv = NULL, *dqkv = NULL, *out = NULL, *dout = NULL;
            float *lse = NULL;
            if (cudaMalloc(&qkv, nq * el) || cudaMalloc(&dqkv, nq * el) ||
                cudaMalloc(&out, no * el) || cudaMalloc(&dout, no * el) ||
                cudaMalloc((void **)&lse, (size_t)(B * NH * S) * 4)) {
                fprintf(stderr, "attention_bench: out of device memory at S = %lld\n",
                        (long long)S);
                return 1;
            }
            /* Small random-ish values: 0x3c00 bf16 = 0.0078; zeros would make
             * every row uniform, which times the same but proves nothing. */
            cudaMemset(qkv, 0x3c, nq * el);
            cudaMemset(dout, 0x3c, no * el);
            float fwd_ms = 0.0f, bwd_ms = 0.0f;
            for (int r = 0; r < reps + 2; r++) {
                if (r == 2)
                    cudaEventRecord(t0, 0);
                px_status st =
                    f32 ? px_cuda_attention_fwd_f32(F(out), lse, NULL, F(qkv), S, B, NH, NKV, HD,
                                                    0, &err)
                        : px_cuda_attention_fwd(H(out), lse, NULL, H(qkv), S, B, NH, NKV, HD, 0,
                                                &err);
                if (check(st, &err))
                    return 1;
            }
            cudaEventRecord(t1, 0);
            for (int r = 0; r < reps; r++) {
                px_status st =
                    f32 ? px_cuda_attention_bwd_f32(F(dqkv), F(dout), F(out), lse, NULL, F(qkv),
                                                    S, B, NH, NKV, HD, 0, &err)
                        : px_cuda_attention_bwd(H(dqkv), H(dout), H(out), lse, NULL, H(qkv), S, B,
                                                NH, NKV, HD, 0, &err);
                if (check(st, &err))
                    return 1;
            }
            cudaEventRecord(t2, 0);
            cudaError_t e = cudaEventSynchronize(t2);
            if (e != cudaSuccess) {
                fprintf(stderr, "attention_bench: %s\n", cudaGetErrorString(e));
                return 1;
            }
            cudaEventElapsedTime(&fwd_ms, t0, t1);
            cudaEventElapsedTime(&bwd_ms, t1, t2);
            fwd_ms /= reps;
            bwd_ms /= reps;
            double fwd_flops = 4.0 * (double)S * (double)S * HD * NH * B / 2.0;
            double bwd_flops = 2.5 * fwd_flops;
            double ftf = fwd_flops / (fwd_ms * 1e-3) / 1e12;
            double btf = bwd_flops / (bwd_ms * 1e-3) / 1e12;
            double ttf = (fwd_flops + bwd_flops) / ((fwd_ms + bwd_ms) * 1e-3) / 1e12;
            printf("%-7s %6lld %9.3f %9.3f %8.1f %8.1f %9.1f %6.1f%%\n", f32 ? "f32" : "bf16",
                   (long long)S, fwd_ms, bwd_ms, ftf, btf, ttf,
                   peak > 0 ? 100.0 * ttf / peak : 0.0);
            cudaFree(qkv);
            cudaFree(dqkv);
            cudaFree(out);
            cudaFree(dout);
            cudaFree(lse);
        }
    return 0;
}
