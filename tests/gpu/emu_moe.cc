/* emu_moe.cc — the mixture-of-experts kernels of kernels/cuda/px_cuda_moe.cu
 * run on the CPU through emu_cuda.h, for both storage types, against their
 * CPU twins: the router (with exact ties between experts, E below and above
 * a warp's 32 lanes), its backward, the dispatch permutation, the combine in
 * its deterministic gather form (with and without gates) and its atomic form,
 * and the gate gradient.  The dispatch is built as the executor builds it
 * (rows ordered by expert, slots t k + j), so every token row receives k
 * expert rows in the combine.  Grids are smaller than the data so every
 * grid-stride loop wraps.  Last, the real launchers' argument checks (k
 * out of 1..8 or above E, gate without slots), which need no device.
 * Exit 0 pass, 1 fail; the seed is printed (PX_TEST_SEED replays it). */
#include "emu_cuda.h"

/* emu_cuda.h has fp32 atomicAdd only; the combine's atomic form also adds
 * into bf16 rows (a compare-and-swap loop on the 16 bits, as a GPU without
 * native bf16 atomics does). */
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v)
{
    std::atomic_ref<uint16_t> bits(*reinterpret_cast<uint16_t *>(p));
    uint16_t old = bits.load(), upd;
    __nv_bfloat16 o;
    do {
        std::memcpy(static_cast<void *>(&o), &old, 2);
        __nv_bfloat16 s = __float2bfloat16_rn(__bfloat162float(o) + __bfloat162float(v));
        std::memcpy(&upd, &s, 2);
    } while (!bits.compare_exchange_weak(old, upd));
    return o;
}

#include "../../kernels/cuda/px_cuda_moe.cu"

extern "C" {
#include "px_kernels_cpu.h"
}

typedef std::vector<int32_t> ivec;

template <typename TS> static const char *kind() { return sizeof(TS) == 4 ? "f32" : "bf16"; }
template <typename TS> static double tol() { return sizeof(TS) == 4 ? 2e-5 : 1e-2; }

static vec as_float(const ivec &v) { return vec(v.begin(), v.end()); }

/* The executor's dispatch (executor/px_moe.c, route()): rows ordered by
 * expert, then token; slots t k + j. */
static void dispatch(const ivec &idx, int64_t T, int64_t E, int64_t k, ivec &rows, ivec &slots)
{
    std::vector<int64_t> pos((size_t)E + 1, 0);
    for (int32_t e : idx)
        pos[(size_t)e + 1]++;
    for (int64_t e = 0; e < E; e++)
        pos[(size_t)e + 1] += pos[(size_t)e];
    rows.assign((size_t)(T * k), 0);
    slots.assign((size_t)(T * k), 0);
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t a = pos[(size_t)idx[(size_t)(t * k + j)]]++;
            rows[(size_t)a] = (int32_t)t;
            slots[(size_t)a] = (int32_t)(t * k + j);
        }
}

/* Router forward and backward on [T, E] logits; returns the top-k choice for
 * the dispatch tests.  Every third token has deliberate ties: three experts
 * share the maximum and two others share a lower value, so both the first
 * pick and later picks must take the lower index. */
template <typename TS>
static ivec router(int64_t T, int64_t E, int64_t k, int grid, const px_router &r)
{
    char l[96];
    const char *kd = kind<TS>();
    vec logits = rnd(T * E, -3, 3);
    for (int64_t t = 0; t < T; t += 3) {
        float *r = logits.data() + t * E;
        int64_t e0 = t % E, e1 = (t * 7 + 3) % E, e2 = (t * 5 + 1) % E;
        r[e0] = r[e1] = r[e2] = 3.5f; /* above every random logit */
        if (E > 6) {
            int64_t f0 = (e0 + 1) % E, f1 = (e0 + E / 2) % E;
            if (f0 != e1 && f0 != e2 && f1 != e1 && f1 != e2 && f0 != f1)
                r[f0] = r[f1] = 3.25f;
        }
    }
    auto dl = dev<TS>(logits);
    vec probs((size_t)(T * E)), gate((size_t)(T * k)), probs2((size_t)(T * E), -7.0f),
        gate2((size_t)(T * k), -7.0f);
    ivec idx((size_t)(T * k)), idx2((size_t)(T * k), -7);
    px_cpu_moe_router_fwd(probs.data(), idx.data(), gate.data(), logits.data(), T, E, k, &r);
    launch(dim3((unsigned)grid), MOE_THREADS, [&] {
        k_moe_router_fwd<TS>(probs2.data(), idx2.data(), gate2.data(), dl.data(), T, E, (int)k,
                             r);
    });
    std::snprintf(l, sizeof l, "router_fwd T=%lld E=%lld k=%lld %s%s x%g probs [%s]",
                  (long long)T, (long long)E, (long long)k,
                  r.score == PX_ROUTER_SIGMOID ? "sigmoid" : "softmax", r.renorm ? " renorm" : "",
                  (double)r.scale, kd);
    compare(l, probs2, probs, 1e-5, 1e-5);
    compare("  idx (exact, ties to the lower index)", as_float(idx2), as_float(idx), 0, 0);
    compare("  gate (fp32)", gate2, gate, 1e-5, 1e-5);

    vec dgate = rnd(T * k, -1, 1), dlog((size_t)(T * E));
    std::vector<TS> dlog2((size_t)(T * E), to_ts<TS>(-7.0f));
    px_cpu_moe_router_bwd(dlog.data(), probs.data(), idx.data(), dgate.data(), T, E, k, &r);
    launch(dim3((unsigned)grid), 64, [&] {
        k_moe_router_bwd<TS>(dlog2.data(), probs.data(), idx.data(), dgate.data(), T, E, (int)k,
                             r);
    });
    std::snprintf(l, sizeof l, "router_bwd dlogits [%s]", kd);
    compare(l, host(dlog2), dlog, tol<TS>(), tol<TS>());
    return idx;
}

/* Permute, unpermute (gather with gate, gather without gate, atomics) and
 * the gate gradient on the executor's dispatch of idx. */
template <typename TS>
static void rows_kernels(const ivec &idx, int64_t T, int64_t E, int64_t k, int64_t C)
{
    char l[96];
    const char *kd = kind<TS>();
    int64_t n = T * k;
    ivec rows, slots;
    dispatch(idx, T, E, k, rows, slots);
    vec x = rnd(T * C, -2, 2), gate = rnd(T * k, 0.05f, 1.0f);
    auto dx = dev<TS>(x);

    /* dispatch: plain, and scaled by the gates (the backward's form) */
    for (int scaled = 0; scaled < 2; scaled++) {
        const float *g = scaled ? gate.data() : nullptr;
        const int32_t *s = scaled ? slots.data() : nullptr;
        vec out((size_t)(n * C));
        std::vector<TS> out2((size_t)(n * C), to_ts<TS>(-7.0f));
        px_cpu_moe_permute(out.data(), x.data(), rows.data(), g, s, n, C);
        launch(dim3(5), 64, [&] {
            k_moe_permute<TS>(out2.data(), dx.data(), rows.data(), g, s, n, C);
        });
        std::snprintf(l, sizeof l, "permute n=%lld C=%lld%s [%s]", (long long)n, (long long)C,
                      scaled ? " x gate" : "", kd);
        compare(l, host(out2), out, scaled ? tol<TS>() : 0, scaled ? tol<TS>() : 0);
    }

    /* combine: the deterministic gather (through the slot inverse) with and
     * without gates, then the atomic form; out starts from random values */
    vec y = rnd(n * C, -2, 2);
    auto dy = dev<TS>(y);
    for (int mode = 0; mode < 3; mode++) {
        const float *g = mode == 0 ? gate.data() : nullptr;
        vec out = rnd(T * C, -1, 1);
        auto dout = dev<TS>(out);
        const int32_t *s = mode == 0 ? slots.data() : nullptr;
        px_cpu_moe_unpermute(out.data(), y.data(), rows.data(), g, s, n, C);
        if (mode < 2) {
            ivec inv((size_t)n, -1); /* the launcher's cudaMemsetAsync(0xff) */
            launch(dim3(3), 64, [&] { k_moe_slot_inverse(inv.data(), slots.data(), n); });
            launch(dim3(7), 64, [&] {
                k_moe_unpermute_gather<TS>(dout.data(), dy.data(), rows.data(), g, inv.data(), n,
                                           C);
            });
        } else {
            launch(dim3(7), 64, [&] {
                k_moe_unpermute_atomic<TS>(dout.data(), dy.data(), rows.data(), n, C);
            });
        }
        static const char *what[] = {"gather x gate", "gather", "atomics"};
        std::snprintf(l, sizeof l, "unpermute %s += [%s]", what[mode], kd);
        /* bf16 atomics round after each of the k adds: twice the tolerance */
        double t = mode == 2 && sizeof(TS) == 2 ? 2 * tol<TS>() : tol<TS>();
        compare(l, host(dout), out, t, t);
    }

    /* gate gradient: dgate[slots[a]] = <dout[rows[a]], y[a]> */
    vec dout = rnd(T * C, -1, 1), dgate = rnd(T * k, -1, 1), dgate2 = rnd(T * k, -1, 1);
    auto ddout = dev<TS>(dout);
    px_cpu_moe_gate_bwd(dgate.data(), dout.data(), y.data(), rows.data(), slots.data(), n, C);
    launch(dim3(2), MOE_THREADS, [&] {
        k_moe_gate_bwd<TS>(dgate2.data(), ddout.data(), dy.data(), rows.data(), slots.data(), n,
                           C);
    });
    std::snprintf(l, sizeof l, "gate_bwd dgate (fp32) [%s]", kd);
    compare(l, dgate2, dgate, 1e-4, 1e-4);
}

template <typename TS> static void all()
{
    /* E above a warp (lanes scan several experts), k = 4, 2 blocks for 37 tokens */
    px_router plain = px_router_softmax_topk(), renorm = plain, sigmoid = plain;
    renorm.renorm = 1;                 /* norm_topk_prob */
    sigmoid.score = PX_ROUTER_SIGMOID; /* DeepSeek-V3's scores, gates renormalised and scaled */
    sigmoid.renorm = 1;
    sigmoid.scale = 2.5f;
    ivec idx = router<TS>(37, 40, 4, 2, plain);
    rows_kernels<TS>(idx, 37, 40, 4, 100);
    /* E below a warp (idle lanes), Mixtral's top-2 of 8 */
    idx = router<TS>(29, 8, 2, 3, plain);
    rows_kernels<TS>(idx, 29, 8, 2, 70);
    /* k = E (every expert taken, the last pass has one candidate), maximum k */
    router<TS>(10, 8, 8, 1, plain);
    router<TS>(29, 8, 2, 3, renorm);
    router<TS>(37, 40, 4, 2, sigmoid);
}

/* The launchers' argument checks, through the real library: they return
 * before touching the device, so they run without a GPU too.  Each must be
 * PX_ERR_INVALID with a message naming the field. */
static void reject(const char *what, const char *field, px_status st, const px_error &e)
{
    bool ok = st == PX_ERR_INVALID && std::strstr(e.msg, field) != nullptr;
    std::printf("  %-40s %s  %s\n", what, e.msg, ok ? "ok" : "FAIL");
    if (!ok)
        failures++;
}

static void rejects()
{
    px_error e;
    float one = 1.0f;
    int32_t r0 = 0;
    px_router plain = px_router_softmax_topk(), grouped = plain;
    grouped.n_group = 4;
    grouped.topk_group = 2;
    px_error_clear(&e);
    reject("refuses router_fwd k = 9", "k = 9",
           px_cuda_moe_router_fwd(nullptr, nullptr, nullptr, nullptr, 4, 16, 9, &plain, 0, &e),
           e);
    px_error_clear(&e);
    reject("refuses router_fwd k > E", "k = 5",
           px_cuda_moe_router_fwd_f32(nullptr, nullptr, nullptr, nullptr, 4, 4, 5, &plain, 0, &e),
           e);
    px_error_clear(&e);
    reject("refuses router_bwd k = 0", "k = 0",
           px_cuda_moe_router_bwd(nullptr, nullptr, nullptr, nullptr, 4, 16, 0, &plain, 0, &e),
           e);
    px_error_clear(&e);
    reject("refuses group-limited routing", "n_group 4",
           px_cuda_moe_router_fwd(nullptr, nullptr, nullptr, nullptr, 4, 16, 2, &grouped, 0, &e),
           e);
    px_error_clear(&e);
    reject("refuses unpermute gate without slots", "slots",
           px_cuda_moe_unpermute(nullptr, nullptr, &r0, &one, nullptr, 1, 8, 0, &e), e);
    px_error_clear(&e);
    reject("refuses permute C = 0", "C = 0",
           px_cuda_moe_permute_f32(nullptr, nullptr, &r0, nullptr, nullptr, 1, 0, 0, &e), e);
    px_error_clear(&e);
    reject("refuses gate_bwd without slots", "slots",
           px_cuda_moe_gate_bwd_f32(nullptr, nullptr, nullptr, &r0, nullptr, 1, 8, 0, &e), e);
}

int main()
{
    const char *env = std::getenv("PX_TEST_SEED");
    uint64_t seed = env ? std::strtoull(env, nullptr, 0) : (uint64_t)std::time(nullptr);
    rng = seed;
    std::printf("# MoE kernels emulated on the CPU: seed %llu (PX_TEST_SEED=%llu)\n",
                (unsigned long long)seed, (unsigned long long)seed);
    all<bf16>();
    all<float>();
    rejects();
    std::printf("# emulated MoE kernels: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
