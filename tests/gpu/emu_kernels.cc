/* emu_kernels.cc — the element-wise, norm and cross-entropy kernels of
 * kernels/cuda/ run on the CPU through emu_cuda.h, for both storage types,
 * against their CPU twins.  Grids are deliberately smaller than the data so
 * every grid-stride and row-stride loop wraps; the norm backward runs in both
 * its shared-memory and its direct-atomic mode.  Exit 0 pass, 1 fail; the
 * seed is printed (PX_TEST_SEED replays it). */
#include "emu_cuda.h"

#include "../../kernels/cuda/px_cuda_elementwise.cu"
#include "../../kernels/cuda/px_cuda_norm.cu"
#include "../../kernels/cuda/px_cuda_xent.cu"

extern "C" {
#include "px_kernels_cpu.h"
}


/* The storage rounds what a kernel writes: the reference is rounded alike
 * for in-place / accumulating outputs before it is compared. */
template <typename TS> static const char *kind()
{
    return sizeof(TS) == 4 ? "f32" : "bf16";
}
template <typename TS> static double tol()
{
    return sizeof(TS) == 4 ? 2e-5 : 1e-2;
}

static void label(char *b, size_t n, const char *what, const char *k)
{
    std::snprintf(b, n, "%s [%s]", what, k);
}

template <typename TS> static void elementwise()
{
    char l[96];
    const char *k = kind<TS>();
    /* embedding */
    {
        int64_t T = 45, C = 24, V = 30, v0 = 5, v1 = 20;
        std::vector<int32_t> tok((size_t)T);
        for (auto &t : tok)
            t = (int32_t)(uniform(0, 1) * V) % V;
        vec table = rnd((v1 - v0) * C, -1, 1), ref((size_t)(T * C));
        auto dtab = dev<TS>(table);
        std::vector<TS> out((size_t)(T * C));
        px_cpu_embedding_fwd(ref.data(), tok.data(), table.data(), T, C, v0, v1);
        launch(dim3(3), 64,
               [&] { k_embedding_fwd<TS>(out.data(), tok.data(), dtab.data(), T, C, v0, v1); });
        label(l, sizeof l, "embedding_fwd", k);
        compare(l, host(out), ref, 0, 0);
        vec g = rnd(T * C, -1, 1), dt = rnd((v1 - v0) * C, -1, 1), dt2 = dt;
        auto dg = dev<TS>(g);
        px_cpu_embedding_bwd(dt.data(), g.data(), tok.data(), T, C, v0, v1);
        launch(dim3(3), 64,
               [&] { k_embedding_bwd<TS>(dt2.data(), dg.data(), tok.data(), T, C, v0, v1); });
        label(l, sizeof l, "embedding_bwd +=", k);
        compare(l, dt2, dt, 1e-5, 1e-5);
    }
    /* positions */
    {
        int64_t S = 9, B = 3, C = 20, P = 16, pos0 = 4;
        vec x = rnd(S * B * C, -1, 1), pos = rnd(P * C, -1, 1);
        auto dx = dev<TS>(x), dp = dev<TS>(pos);
        px_cpu_positions_fwd(x.data(), pos.data(), S, B, C, pos0);
        launch(dim3(2), 64, [&] { k_positions_fwd<TS>(dx.data(), dp.data(), S, B, C, pos0); });
        label(l, sizeof l, "positions_fwd", k);
        compare(l, host(dx), x, tol<TS>(), tol<TS>());
        vec g = rnd(S * B * C, -1, 1), d = rnd(P * C, -1, 1), d2 = d;
        auto dg = dev<TS>(g);
        px_cpu_positions_bwd(d.data(), g.data(), S, B, C, pos0);
        launch(dim3(2), 32, [&] { k_positions_bwd<TS>(d2.data(), dg.data(), S, B, C, pos0); });
        label(l, sizeof l, "positions_bwd +=", k);
        compare(l, d2, d, 1e-5, 1e-5);
    }
    /* bias (column sums over row slices) and residual */
    {
        int64_t T = 70, N = 45;
        vec x = rnd(T * N, -1, 1), b = rnd(N, -1, 1);
        auto dx = dev<TS>(x), db = dev<TS>(b);
        px_cpu_bias_add_fwd(x.data(), b.data(), T, N);
        launch(dim3(4), 64, [&] { k_bias_add_fwd<TS>(dx.data(), db.data(), T, N); });
        label(l, sizeof l, "bias_add_fwd", k);
        compare(l, host(dx), x, tol<TS>(), tol<TS>());
        vec g = rnd(T * N, -1, 1), d = rnd(N, -1, 1), d2 = d;
        auto dg = dev<TS>(g);
        px_cpu_bias_add_bwd(d.data(), g.data(), T, N);
        /* the launcher's shape: 32 x 8 threads, 2 column blocks x 3 row slices of 25 */
        launch(dim3(2, 3), dim3(32, 8),
               [&] { k_bias_add_bwd<TS>(d2.data(), dg.data(), T, N, 25); });
        label(l, sizeof l, "bias_add_bwd +=", k);
        compare(l, d2, d, 1e-5, 1e-5);
        vec a = rnd(T * N, -1, 1), c = rnd(T * N, -1, 1), o((size_t)(T * N));
        auto da = dev<TS>(a), dc = dev<TS>(c);
        std::vector<TS> dout((size_t)(T * N));
        px_cpu_residual_fwd(o.data(), a.data(), c.data(), T * N);
        launch(dim3(3), 64, [&] { k_residual_fwd<TS>(dout.data(), da.data(), dc.data(), T * N); });
        label(l, sizeof l, "residual_fwd", k);
        compare(l, host(dout), o, tol<TS>(), tol<TS>());
        px_cpu_residual_bwd(a.data(), c.data(), o.data(), T * N);
        auto dgo = dev<TS>(o);
        launch(dim3(3), 64, [&] { k_residual_bwd<TS>(da.data(), dc.data(), dgo.data(), T * N); });
        label(l, sizeof l, "residual_bwd da, db +=", k);
        compare(l, host(da), a, tol<TS>(), tol<TS>());
        compare("  db", host(dc), c, tol<TS>(), tol<TS>());
    }
    /* RoPE: plain, Llama 3's scaled frequencies, DeepSeek's interleaved pairs */
    px_rope ropes[3] = {px_rope_plain(10000.0), px_rope_plain(500000.0), px_rope_plain(10000.0)};
    ropes[1].scale = PX_ROPE_SCALE_LLAMA3;
    ropes[1].factor = 8.0;
    ropes[1].low_freq_factor = 1.0;
    ropes[1].high_freq_factor = 4.0;
    ropes[1].original_max_positions = 8192.0;
    ropes[2].interleaved = 1;
    for (const px_rope &rope : ropes) {
        int64_t S = 5, B = 2, NH = 4, NKV = 2, HD = 16, pos0 = 100, n = S * B * (NH + 2 * NKV) * HD;
        vec x = rnd(n, -1, 1);
        auto dx = dev<TS>(x);
        px_cpu_rope_fwd(x.data(), S, B, NH, NKV, HD, pos0, &rope);
        launch(dim3(3), 64, [&] { k_rope<TS>(dx.data(), S, B, NH, NKV, HD, pos0, rope, 1.0f); });
        label(l, sizeof l, "rope_fwd", k);
        compare(l, host(dx), x, tol<TS>(), tol<TS>());
        vec g = rnd(n, -1, 1);
        auto dg = dev<TS>(g);
        px_cpu_rope_bwd(g.data(), S, B, NH, NKV, HD, pos0, &rope);
        launch(dim3(3), 64, [&] { k_rope<TS>(dg.data(), S, B, NH, NKV, HD, pos0, rope, -1.0f); });
        label(l, sizeof l, "rope_bwd", k);
        compare(l, host(dg), g, tol<TS>(), tol<TS>());
    }
    /* SwiGLU, GeLU */
    {
        int64_t T = 13, F = 37, n = 300;
        vec gu = rnd(T * 2 * F, -3, 3), o((size_t)(T * F)), dgu((size_t)(T * 2 * F));
        auto dgu_in = dev<TS>(gu);
        std::vector<TS> dout((size_t)(T * F)), ddgu((size_t)(T * 2 * F));
        px_cpu_swiglu_fwd(o.data(), gu.data(), T, F);
        launch(dim3(3), 64, [&] { k_swiglu_fwd<TS>(dout.data(), dgu_in.data(), T, F); });
        label(l, sizeof l, "swiglu_fwd", k);
        compare(l, host(dout), o, tol<TS>(), tol<TS>());
        vec g = rnd(T * F, -1, 1);
        auto dg = dev<TS>(g);
        px_cpu_swiglu_bwd(dgu.data(), g.data(), gu.data(), T, F);
        launch(dim3(3), 64, [&] { k_swiglu_bwd<TS>(ddgu.data(), dg.data(), dgu_in.data(), T, F); });
        label(l, sizeof l, "swiglu_bwd", k);
        compare(l, host(ddgu), dgu, tol<TS>(), tol<TS>());
        vec x = rnd(n, -4, 4), y((size_t)n), dy((size_t)n);
        auto dx = dev<TS>(x);
        std::vector<TS> dyo((size_t)n);
        px_cpu_gelu_fwd(y.data(), x.data(), n);
        launch(dim3(2), 64, [&] { k_gelu_fwd<TS>(dyo.data(), dx.data(), n); });
        label(l, sizeof l, "gelu_fwd", k);
        compare(l, host(dyo), y, tol<TS>(), tol<TS>());
        vec gg = rnd(n, -1, 1);
        auto dgg = dev<TS>(gg);
        px_cpu_gelu_bwd(dy.data(), gg.data(), x.data(), n);
        launch(dim3(2), 64, [&] { k_gelu_bwd<TS>(dgg.data(), dgg.data(), dx.data(), n); });
        label(l, sizeof l, "gelu_bwd (in place)", k);
        compare(l, host(dgg), dy, tol<TS>(), tol<TS>());
    }
}

template <typename TS> static void norms(int64_t T, int64_t C, int direct)
{
    char l[96];
    const char *k = kind<TS>();
    vec x = rnd(T * C, -2, 3), w = rnd(C, 0.5f, 1.5f), b = rnd(C, -1, 1);
    auto dx = dev<TS>(x), dw = dev<TS>(w), db = dev<TS>(b);
    /* RMSNorm */
    vec o((size_t)(T * C)), r((size_t)T), r2((size_t)T);
    std::vector<TS> dout((size_t)(T * C));
    px_cpu_rmsnorm_fwd(o.data(), r.data(), x.data(), w.data(), T, C, 1e-5f);
    launch(dim3(5), 64,
           [&] { k_rmsnorm_fwd<TS>(dout.data(), r2.data(), dx.data(), dw.data(), T, C, 1e-5f); });
    std::snprintf(l, sizeof l, "rmsnorm_fwd C=%lld [%s]", (long long)C, k);
    compare(l, host(dout), o, tol<TS>(), tol<TS>());
    compare("  rstd", r2, r, 1e-5, 1e-5);
    vec g = rnd(T * C, -1, 1), dinp = rnd(T * C, -1, 1), dwt = rnd(C, -1, 1), dwt2 = dwt;
    auto dg = dev<TS>(g), ddinp = dev<TS>(dinp);
    for (auto &v : dinp) /* the storage holds the rounded start value */
        v = from_ts(to_ts<TS>(v));
    px_cpu_rmsnorm_bwd(dinp.data(), dwt.data(), g.data(), x.data(), w.data(), r.data(), T, C);
    launch(dim3(4), 64, [&] {
        k_rmsnorm_bwd<TS>(ddinp.data(), dwt2.data(), dg.data(), dx.data(), dw.data(), r.data(), T,
                          C, direct);
    });
    std::snprintf(l, sizeof l, "rmsnorm_bwd C=%lld %s [%s]", (long long)C,
                  direct ? "atomics" : "smem", k);
    compare(l, host(ddinp), dinp, tol<TS>(), tol<TS>());
    compare("  dweight +=", dwt2, dwt, 1e-4, 1e-4);
    /* LayerNorm */
    vec mu((size_t)T), mu2((size_t)T);
    px_cpu_layernorm_fwd(o.data(), mu.data(), r.data(), x.data(), w.data(), b.data(), T, C, 1e-5f);
    launch(dim3(5), 64, [&] {
        k_layernorm_fwd<TS>(dout.data(), mu2.data(), r2.data(), dx.data(), dw.data(), db.data(), T,
                            C, 1e-5f);
    });
    std::snprintf(l, sizeof l, "layernorm_fwd C=%lld [%s]", (long long)C, k);
    compare(l, host(dout), o, tol<TS>(), tol<TS>());
    compare("  mean", mu2, mu, 1e-5, 1e-5);
    compare("  rstd", r2, r, 1e-5, 1e-5);
    vec dbs = rnd(C, -1, 1), dbs2 = dbs;
    dinp = rnd(T * C, -1, 1);
    ddinp = dev<TS>(dinp);
    for (auto &v : dinp)
        v = from_ts(to_ts<TS>(v));
    dwt = rnd(C, -1, 1);
    dwt2 = dwt;
    px_cpu_layernorm_bwd(dinp.data(), dwt.data(), dbs.data(), g.data(), x.data(), w.data(),
                         mu.data(), r.data(), T, C);
    launch(dim3(4), 64, [&] {
        k_layernorm_bwd<TS>(ddinp.data(), dwt2.data(), dbs2.data(), dg.data(), dx.data(), dw.data(),
                            mu.data(), r.data(), T, C, direct);
    });
    std::snprintf(l, sizeof l, "layernorm_bwd C=%lld %s [%s]", (long long)C,
                  direct ? "atomics" : "smem", k);
    compare(l, host(ddinp), dinp, tol<TS>(), tol<TS>());
    compare("  dweight +=", dwt2, dwt, 1e-4, 1e-4);
    compare("  dbias +=", dbs2, dbs, 1e-4, 1e-4);
}

template <typename TS> static void xent()
{
    char l[96];
    const char *k = kind<TS>();
    int64_t T = 11, Vl = 150, v0 = 50;
    vec logits = rnd(T * Vl, -5, 5);
    auto dl = dev<TS>(logits);
    std::vector<int32_t> tg((size_t)T);
    for (auto &t : tg)
        t = (int32_t)(uniform(0, 1) * 300) % 300;
    vec mx((size_t)T), se((size_t)T), tl((size_t)T), loss((size_t)T);
    vec mx2((size_t)T), se2((size_t)T), tl2((size_t)T), loss2((size_t)T);
    px_cpu_xent_max_fwd(mx.data(), logits.data(), T, Vl);
    px_cpu_xent_sumexp_fwd(se.data(), tl.data(), logits.data(), mx.data(), tg.data(), T, Vl, v0);
    px_cpu_xent_loss_fwd(loss.data(), mx.data(), se.data(), tl.data(), T);
    launch(dim3(4), 64, [&] { k_xent_max<TS>(mx2.data(), dl.data(), T, Vl); });
    label(l, sizeof l, "xent_max (exact)", k);
    compare(l, mx2, mx, 0, 0);
    launch(dim3(4), 64, [&] {
        k_xent_sumexp<TS>(se2.data(), tl2.data(), dl.data(), mx.data(), tg.data(), T, Vl, v0);
    });
    compare("  sumexp", se2, se, 1e-5, 1e-5);
    compare("  target_logit (exact)", tl2, tl, 0, 0);
    launch(dim3(1), 64, [&] { k_xent_loss<TS>(loss2.data(), mx.data(), se.data(), tl.data(), T); });
    compare("  loss", loss2, loss, 1e-5, 1e-5);
    vec d((size_t)(T * Vl));
    px_cpu_xent_bwd(d.data(), logits.data(), mx.data(), se.data(), tg.data(), 0.25f, T, Vl, v0);
    launch(dim3(5), 64, [&] {
        k_xent_bwd<TS>(dl.data(), dl.data(), mx.data(), se.data(), tg.data(), 0.25f, T, Vl, v0);
    });
    label(l, sizeof l, "xent_bwd (in place)", k);
    compare(l, host(dl), d, tol<TS>(), tol<TS>());
}

static void adamw()
{
    int64_t n = 300, step = 4;
    vec p = rnd(n, -1, 1), g = rnd(n, -1, 1), m = rnd(n, -0.1f, 0.1f), v = rnd(n, 0, 0.01f);
    vec p2 = p, m2 = m, v2 = v;
    std::vector<bf16> pb((size_t)n);
    px_cpu_adamw_step(p.data(), g.data(), m.data(), v.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f,
                      step);
    float c1 = 1.0f - powf(0.9f, (float)step), c2 = 1.0f - powf(0.95f, (float)step);
    launch(dim3(2), 64, [&] {
        k_adamw(p2.data(), g.data(), m2.data(), v2.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, c1,
                c2, pb.data());
    });
    compare("adamw param", p2, p, 1e-6, 1e-5);
    compare("  m", m2, m, 1e-6, 1e-5);
    compare("  v", v2, v, 1e-6, 1e-5);
    vec pr = p;
    for (auto &x : pr)
        x = round_bf16(x);
    compare("  bf16 weights", host(pb), pr, 0, 0);
}

int main()
{
    const char *env = std::getenv("PX_TEST_SEED");
    uint64_t seed = env ? std::strtoull(env, nullptr, 0) : (uint64_t)std::time(nullptr);
    rng = seed;
    std::printf("# element-wise, norm and cross-entropy kernels emulated on the CPU: seed %llu "
                "(PX_TEST_SEED=%llu)\n",
                (unsigned long long)seed, (unsigned long long)seed);
    elementwise<bf16>();
    elementwise<float>();
    norms<bf16>(23, 300, 0);
    norms<float>(23, 300, 1);
    norms<float>(9, 1000, 0);
    xent<bf16>();
    xent<float>();
    adamw();
    std::printf("# emulated kernels: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
