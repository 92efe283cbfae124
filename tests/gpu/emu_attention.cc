/* emu_attention.cc — runs the attention kernels of
 * kernels/cuda/px_cuda_attention.cu on the CPU, thread for thread, and
 * compares them with the CPU twin: a check of the kernels' index math,
 * tiling, masking and online softmax that needs no GPU.
 *
 * Every CUDA thread of a block is a std::thread; __syncthreads is a barrier
 * of the block; __shfl_xor_sync and mma.sync exchange values through
 * per-warp slots between two barriers of the warp.  mma.m16n8k16 is computed
 * from the fragment layouts of the PTX ISA (the same ones the kernels assume:
 * what this cannot check is that assumption itself — the GPU tests do).
 * Blocks run one after another.  Exit 0 pass, 1 fail; the seed is printed
 * (PX_TEST_SEED replays it). */
#include "emu_cuda.h"

#include "../../kernels/cuda/px_cuda_attention.cu"

extern "C" {
#include "px_kernels_cpu.h"
}

template <int HD, typename TS>
static void run_case(int S, int B, int NH, int NKV, float range)
{
    const bool f32 = sizeof(TS) == 4;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, nq = (int64_t)S * B * W,
                  no = (int64_t)S * B * NH * HD, nl = (int64_t)B * NH * S;
    std::vector<float> qkv((size_t)nq), g((size_t)no);
    for (auto &x : qkv)
        x = round_bf16(uniform(-range, range));
    for (auto &x : g)
        x = round_bf16(uniform(-1, 1));
    std::vector<TS> dqkv_in((size_t)nq), dg((size_t)no), dout((size_t)no), ddq((size_t)nq);
    for (size_t i = 0; i < qkv.size(); i++)
        dqkv_in[i] = to_ts<TS>(qkv[i]);
    for (size_t i = 0; i < g.size(); i++)
        dg[i] = to_ts<TS>(g[i]);
    std::vector<float> out((size_t)no), lse((size_t)nl), dq((size_t)nq), dlse((size_t)nl, NAN);

    px_cpu_attention_fwd(out.data(), lse.data(), nullptr, qkv.data(), S, B, NH, NKV, HD);
    const float scale = 1.0f / std::sqrt((float)HD), scale_log2 = LOG2E * scale;
    launch(dim3((unsigned)((S + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B), ATT_THREADS,
           [&] { k_attn_fwd<HD, TS>(dout.data(), dlse.data(), dqkv_in.data(), S, B, NH, NKV,
                                    scale_log2); });
    char l[120];
    std::snprintf(l, sizeof l, "fwd S=%d B=%d heads %d/%d HD=%d [%s]", S, B, NH, NKV, HD,
                  f32 ? "f32" : "bf16");
    std::vector<float> got((size_t)no);
    for (size_t i = 0; i < got.size(); i++)
        got[i] = from_ts(dout[i]);
    compare(l, got, out, 2e-2, 2e-2);
    compare("  lse", dlse, lse, 2e-3, 2e-3);

    /* backward from the reference's out (rounded as the storage holds it) and lse */
    std::vector<TS> dref_out((size_t)no);
    for (size_t i = 0; i < out.size(); i++) {
        dref_out[i] = to_ts<TS>(out[i]);
        out[i] = from_ts(dref_out[i]);
    }
    px_cpu_attention_bwd(dq.data(), g.data(), out.data(), lse.data(), nullptr, qkv.data(), S, B,
                         NH, NKV, HD);
    std::vector<float> Dsum((size_t)nl, NAN);
    const unsigned dot_blocks = (unsigned)((nl + 7) / 8);
    launch(dim3(dot_blocks, 1, 1), 256,
           [&] { k_attn_bwd_dot<TS>(Dsum.data(), dg.data(), dref_out.data(), S, B, NH, HD); });
    for (auto &x : ddq)
        x = to_ts<TS>(NAN); /* every element must be overwritten */
    launch(dim3((unsigned)((S + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B), ATT_THREADS,
           [&] { k_attn_bwd_dq<HD, TS>(ddq.data(), dg.data(), lse.data(), Dsum.data(),
                                       dqkv_in.data(), S, B, NH, NKV, scale_log2, scale); });
    launch(dim3((unsigned)((S + ATT_BK - 1) / ATT_BK), (unsigned)NKV, (unsigned)B), ATT_THREADS,
           [&] { k_attn_bwd_dkdv<HD, TS>(ddq.data(), dg.data(), lse.data(), Dsum.data(),
                                         dqkv_in.data(), S, B, NH, NKV, scale_log2, scale); });
    const char *part[3] = {"  dq", "  dk", "  dv"};
    int64_t c0[3] = {0, (int64_t)NH * HD, (int64_t)(NH + NKV) * HD};
    int64_t c1[3] = {(int64_t)NH * HD, (int64_t)(NH + NKV) * HD, W};
    for (int p = 0; p < 3; p++) {
        std::vector<float> gs, rs;
        for (int64_t r = 0; r < (int64_t)S * B; r++)
            for (int64_t c = c0[p]; c < c1[p]; c++) {
                gs.push_back(from_ts(ddq[(size_t)(r * W + c)]));
                rs.push_back(dq[(size_t)(r * W + c)]);
            }
        compare(part[p], gs, rs, 3e-2, 3e-2);
    }
}

int main()
{
    const char *env = std::getenv("PX_TEST_SEED");
    uint64_t seed = env ? std::strtoull(env, nullptr, 0) : (uint64_t)std::time(nullptr);
    rng = seed;
    std::printf("# attention kernels emulated on the CPU: seed %llu (PX_TEST_SEED=%llu)\n",
                (unsigned long long)seed, (unsigned long long)seed);
    run_case<64, bf16>(130, 1, 2, 1, 2.0f);  /* MQA, 3 query tiles, ragged last tile */
    run_case<16, float>(70, 2, 4, 2, 2.0f);  /* GQA, fp32 storage, two batches */
    run_case<128, bf16>(64, 1, 2, 2, 3.0f);  /* MHA, one tile, sharper softmax */
    run_case<32, float>(100, 1, 2, 1, 2.0f);
    std::printf("# emulated attention: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
