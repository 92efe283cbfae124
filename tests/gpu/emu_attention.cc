/* emu_attention.cc — runs the attention kernels of
 * kernels/cuda/px_cuda_attention.cu on the CPU, thread for thread, and
 * compares them with the CPU twins (plain and context-parallel): a check of
 * the kernels' index math, tiling, masking, online softmax, ldmatrix
 * fragments and cp.async pipelining that needs no GPU.  It first checks the
 * emulator's ldmatrix against the PTX ISA's table, and last that no launch
 * raced on shared memory or left a cp.async pending.
 *
 * Every CUDA thread of a block is a std::thread; __syncthreads is a barrier
 * of the block; __shfl_xor_sync and mma.sync exchange values through
 * per-warp slots between two barriers of the warp.  mma.m16n8k16 and
 * ldmatrix are computed from the fragment layouts of the PTX ISA (the same
 * ones the kernels assume: that the device agrees, the GPU tests check).
 * Blocks run one after another.  Exit 0 pass, 1 fail; the seed is printed
 * (PX_TEST_SEED replays it). */
#include "emu_cuda.h"

#include "../../kernels/cuda/px_cuda_attention.cu"

extern "C" {
#include "px_kernels_cpu.h"
}

/* ldmatrix as the emulator models it, against the PTX ISA's tables written
 * out here on their own (PTX ISA, "Warp-level matrix load instruction:
 * ldmatrix", the fragment figures for .m8n8 .b16):
 *   without .trans, thread t receives in register i the elements of matrix i
 *     at row t/4, columns 2(t%4) (low half) and 2(t%4)+1 (high half);
 *   with .trans, matrix i's column t/4, rows 2(t%4) (low) and 2(t%4)+1 (high).
 * The matrices' rows sit at scattered, padded places in shared memory; each
 * element holds a code naming (matrix, row, column).  Lanes that are not
 * address providers (8..31 for x1, 16..31 for x2) point at a decoy matrix,
 * which the instruction must ignore.  The same check runs the kernels' ldsm
 * wrapper, the function they call. */
static uint16_t code(int m, int r, int c) { return (uint16_t)(0x1000 * (m + 1) + 16 * r + c); }

static void ldmatrix_case(int num, bool trans)
{
    /* row r of matrix m at 16-byte slot perm(8m + r) of a 48-slot region;
     * slots 40..47 hold the decoy (code matrix 9) */
    auto slot = [](int m, int r) { return ((8 * m + r) * 13 + 5) % 40; };
    std::vector<uint32_t> got(32 * 4, 0xdeadbeefu);
    launch(dim3(1, 1, 1), 32, [&] {
        uint16_t *sm = reinterpret_cast<uint16_t *>(px_emu_smem);
        const int lane = emu_lane();
        if (lane == 0) {
            for (int m = 0; m < 4; m++)
                for (int r = 0; r < 8; r++)
                    for (int c = 0; c < 8; c++)
                        sm[slot(m, r) * 8 + c] = code(m, r, c);
            for (int r = 0; r < 8; r++)
                for (int c = 0; c < 8; c++)
                    sm[(40 + r) * 8 + c] = code(9, r, c);
        }
        __syncthreads();
        const int m = lane / 8, r = lane % 8;
        const bf16 *row = reinterpret_cast<const bf16 *>(
            sm + (m < num ? slot(m, r) : 40 + r) * 8);
        uint32_t reg[4] = {0, 0, 0, 0};
        if (num == 1)
            trans ? ldsm<1, true>(reg, row) : ldsm<1, false>(reg, row);
        else if (num == 2)
            trans ? ldsm<2, true>(reg, row) : ldsm<2, false>(reg, row);
        else
            trans ? ldsm<4, true>(reg, row) : ldsm<4, false>(reg, row);
        for (int i = 0; i < num; i++)
            got[(size_t)(lane * 4 + i)] = reg[i];
    });
    int bad = 0;
    for (int t = 0; t < 32; t++)
        for (int i = 0; i < num; i++) {
            const uint32_t lo = trans ? code(i, 2 * (t % 4), t / 4) : code(i, t / 4, 2 * (t % 4));
            const uint32_t hi = trans ? code(i, 2 * (t % 4) + 1, t / 4)
                                      : code(i, t / 4, 2 * (t % 4) + 1);
            const uint32_t want = lo | (hi << 16), have = got[(size_t)(t * 4 + i)];
            if (have != want && bad++ < 3)
                std::printf("    lane %d reg %d: got %08x, ISA table says %08x\n", t, i, have,
                            want);
        }
    std::printf("  ldmatrix.m8n8.x%d%s.b16 vs the ISA table%*s%s\n", num, trans ? ".trans" : "",
                trans ? 15 : 21, "", bad ? "FAIL" : "ok");
    if (bad)
        failures++;
}

/* One forward + backward of the kernels against the CPU twin.  cp = 0: plain
 * causal attention over S rows (q = kv = qkv, no positions).  cp > 0: context
 * parallelism as the executor lays it out — the sequence in 2 cp chunks, rank
 * `rank` holding chunks rank and 2 cp - 1 - rank as its Sq = S / cp query
 * rows, against all S rows of kv — compared with px_cpu_attention_kv_*. */
template <int HD, typename TS>
static void run_case(int S, int B, int NH, int NKV, float range, int cp = 0, int rank = 0)
{
    const bool f32 = sizeof(TS) == 4;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD;
    std::vector<int32_t> qpos;
    if (cp > 0) {
        const int chunk = S / (2 * cp);
        for (int c : {rank, 2 * cp - 1 - rank})
            for (int i = 0; i < chunk; i++)
                qpos.push_back(c * chunk + i);
    }
    const int Sq = cp > 0 ? (int)qpos.size() : S, Skv = S;
    const int64_t nkv = (int64_t)Skv * B * W, nq = (int64_t)Sq * B * W,
                  no = (int64_t)Sq * B * NH * HD, nl = (int64_t)B * NH * Sq;
    std::vector<float> kv((size_t)nkv), q((size_t)nq), g((size_t)no);
    for (auto &x : kv)
        x = round_bf16(uniform(-range, range));
    for (int64_t r = 0; r < (int64_t)Sq * B; r++) /* query rows: gathered kv rows */
        for (int64_t c = 0; c < W; c++) {
            const int64_t src = cp > 0 ? (int64_t)qpos[(size_t)(r / B)] * B + r % B : r;
            q[(size_t)(r * W + c)] = kv[(size_t)(src * W + c)];
        }
    for (auto &x : g)
        x = round_bf16(uniform(-1, 1));
    auto dev = [](const std::vector<float> &x) {
        std::vector<TS> d(x.size());
        for (size_t i = 0; i < x.size(); i++)
            d[i] = to_ts<TS>(x[i]);
        return d;
    };
    std::vector<TS> dkv_in = dev(kv), dq_in = dev(q), dg = dev(g), dout((size_t)no);
    const int32_t *dpos = cp > 0 ? qpos.data() : nullptr;
    std::vector<float> out((size_t)no), lse((size_t)nl), dlse((size_t)nl, NAN);

    if (cp > 0)
        px_cpu_attention_kv_fwd(out.data(), lse.data(), q.data(), qpos.data(), kv.data(), Sq,
                                Skv, B, NH, NKV, HD);
    else
        px_cpu_attention_fwd(out.data(), lse.data(), nullptr, kv.data(), S, B, NH, NKV, HD);
    const float scale = 1.0f / std::sqrt((float)HD), scale_log2 = LOG2E * scale;
    launch(dim3((unsigned)((Sq + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B), ATT_THREADS,
           [&] {
               k_attn_fwd<HD, TS>(dout.data(), dlse.data(), dq_in.data(), dkv_in.data(), dpos,
                                  Sq, Skv, B, NH, NKV, scale_log2);
           });
    char l[120];
    if (cp > 0)
        std::snprintf(l, sizeof l, "kv fwd S=%d cp=%d rank %d B=%d heads %d/%d HD=%d [%s]", S,
                      cp, rank, B, NH, NKV, HD, f32 ? "f32" : "bf16");
    else
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
    std::vector<float> dq((size_t)nq), dkv((size_t)nkv);
    if (cp > 0)
        px_cpu_attention_kv_bwd(dq.data(), dkv.data(), g.data(), out.data(), lse.data(),
                                q.data(), qpos.data(), kv.data(), Sq, Skv, B, NH, NKV, HD);
    else
        px_cpu_attention_bwd(dq.data(), g.data(), out.data(), lse.data(), nullptr, kv.data(), S,
                             B, NH, NKV, HD);
    std::vector<float> Dsum((size_t)nl, NAN);
    const unsigned dot_blocks = (unsigned)((nl + 7) / 8);
    launch(dim3(dot_blocks, 1, 1), 256,
           [&] { k_attn_bwd_dot<TS>(Dsum.data(), dg.data(), dref_out.data(), Sq, B, NH, HD); });
    /* every element the kernels own must be overwritten: start from NaN */
    std::vector<TS> ddq((size_t)nq, to_ts<TS>(NAN)), ddkv((size_t)nkv, to_ts<TS>(NAN));
    TS *dq_dev = ddq.data(), *dkv_dev = cp > 0 ? ddkv.data() : ddq.data(); /* plain: one dqkv */
    launch(dim3((unsigned)((Sq + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B), ATT_THREADS,
           [&] {
               k_attn_bwd_dq<HD, TS>(dq_dev, dg.data(), lse.data(), Dsum.data(), dq_in.data(),
                                     dkv_in.data(), dpos, Sq, Skv, B, NH, NKV, scale_log2,
                                     scale);
           });
    launch(dim3((unsigned)((Skv + ATT_BK - 1) / ATT_BK), (unsigned)NKV, (unsigned)B),
           ATT_THREADS, [&] {
               k_attn_bwd_dkdv<HD, TS>(dkv_dev, dg.data(), lse.data(), Dsum.data(),
                                       dq_in.data(), dkv_in.data(), dpos, Sq, Skv, B, NH, NKV,
                                       scale_log2, scale);
           });
    /* the heads each kernel writes: q heads of dq, k and v heads of dkv (the kv
     * launcher zeroes the others with a memset, checked by the GPU test) */
    const char *part[3] = {"  dq", "  dk", "  dv"};
    const int64_t c0[3] = {0, (int64_t)NH * HD, (int64_t)(NH + NKV) * HD};
    const int64_t c1[3] = {(int64_t)NH * HD, (int64_t)(NH + NKV) * HD, W};
    for (int p = 0; p < 3; p++) {
        const std::vector<TS> &gsrc = p == 0 ? ddq : (cp > 0 ? ddkv : ddq);
        const std::vector<float> &rsrc = p == 0 ? dq : (cp > 0 ? dkv : dq);
        const int64_t rows = (int64_t)(p == 0 ? Sq : Skv) * B;
        std::vector<float> gs, rs;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = c0[p]; c < c1[p]; c++) {
                gs.push_back(from_ts(gsrc[(size_t)(r * W + c)]));
                rs.push_back(rsrc[(size_t)(r * W + c)]);
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
    for (int num = 1; num <= 4; num *= 2) {
        ldmatrix_case(num, false);
        ldmatrix_case(num, true);
    }
    run_case<64, bf16>(130, 1, 2, 1, 2.0f);  /* MQA, 3 query tiles, ragged last tile */
    run_case<16, float>(70, 2, 4, 2, 2.0f);  /* GQA, fp32 storage, two batches */
    run_case<128, bf16>(64, 1, 2, 2, 3.0f);  /* MHA, one tile, sharper softmax */
    run_case<32, float>(100, 1, 2, 1, 2.0f);
    /* context parallelism, cp = 2: chunks of 50 rows (ragged tiles); rank 0
     * holds positions 0-49 and 150-199, rank 1 positions 50-149 */
    run_case<64, bf16>(200, 1, 2, 1, 2.0f, 2, 0);
    run_case<32, float>(200, 1, 2, 1, 2.0f, 2, 1);
    /* every kernel launch above also ran the shared-memory race check */
    std::printf("  shared-memory races / cp.async left pending: %ld  %s\n",
                px_emu_races.load(), px_emu_races.load() ? "FAIL" : "ok");
    if (px_emu_races.load())
        failures++;
    std::printf("# emulated attention: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
