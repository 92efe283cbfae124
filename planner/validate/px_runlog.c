/* px_runlog.c — training logs as published-runs rows (px_runlog.h). */
#include "px_runlog.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 100000

/* The lines of a file, ANSI colour codes removed (torchtitan colours its
 * metrics). */
typedef struct {
    char **line;
    int n;
} text;

static void text_free(text *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->line[i]);
    free(t->line);
    memset(t, 0, sizeof *t);
}

static void strip_ansi(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\033' && r[1] == '[') {
            r += 2;
            while (*r && !isalpha((unsigned char)*r))
                r++;
            if (!*r)
                break;
            continue;
        }
        *w++ = *r;
    }
    *w = '\0';
}

static px_status text_read(const char *path, text *t, px_error *err)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot open the log");
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    int cap_lines = 0;
    px_status st = PX_OK;
    while ((len = getline(&buf, &cap, f)) >= 0) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        strip_ansi(buf);
        if (t->n == cap_lines) {
            cap_lines = cap_lines ? 2 * cap_lines : 256;
            char **l = realloc(t->line, (size_t)cap_lines * sizeof *l);
            if (!l) {
                st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory reading %s", path);
                break;
            }
            t->line = l;
        }
        if (!(t->line[t->n] = strdup(buf))) {
            st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory reading %s", path);
            break;
        }
        t->n++;
    }
    free(buf);
    if (st == PX_OK && ferror(f))
        st = px_error_set(err, PX_ERR_IO, path, 0, 0, "read error");
    fclose(f);
    if (st != PX_OK)
        text_free(t);
    return st;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) after leaving out the first (warm-up) value when
 * there are others. */
static double steady_median(double *v, int n)
{
    if (n > 1) {
        v++;
        n--;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The number after `key` on line s (commas of thousands skipped), or NAN. */
static double number_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    if (!p)
        return NAN;
    p += strlen(key);
    char num[64];
    int k = 0;
    while (*p == ' ')
        p++;
    for (; *p && k < 63 && (isdigit((unsigned char)*p) || strchr(".,eE+-", *p)); p++)
        if (*p != ',')
            num[k++] = *p;
    num[k] = '\0';
    char *end;
    double v = strtod(num, &end);
    return k && end != num ? v : NAN;
}

/* The row's precision, framework and a note saying which log lines its
 * measurement is the median of. */
static void set_provenance(json_t *row, const char *precision, const char *framework,
                           const char *lines, int n)
{
    json_object_set_new(row, "precision", json_string(precision));
    json_object_set_new(row, "framework", json_string(framework));
    char note[128];
    snprintf(note, sizeof note, "from a %s log: median of %d %s lines%s", framework, n, lines,
             n > 1 ? " after the first" : "");
    json_object_set_new(row, "notes", json_string(note));
}

/* ---- values by name (Megatron's arguments, the TOML's section.key) ---- */

static const char *val(json_t *kv, const char *key)
{
    json_t *v = json_object_get(kv, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool is_none(const char *v)
{
    return !v || !strcmp(v, "None") || !strcmp(v, "null") || !v[0];
}

static bool is_true(const char *v)
{
    return v && (!strcmp(v, "True") || !strcmp(v, "true"));
}

/* An integer argument, dflt when absent or None; false when malformed. */
static bool int_of(json_t *kv, const char *key, long long dflt, long long *out)
{
    const char *v = val(kv, key);
    if (is_none(v)) {
        *out = dflt;
        return true;
    }
    char *end;
    *out = strtoll(v, &end, 10);
    return end != v && *end == '\0';
}

static px_status need_int(json_t *kv, const char *key, const char *file, long long *out,
                          px_error *err)
{
    if (is_none(val(kv, key)) || !int_of(kv, key, 0, out) || *out <= 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s: missing or not a positive integer (%s)", key,
                            val(kv, key) ? val(kv, key) : "absent");
    return PX_OK;
}

static void set_int(json_t *o, const char *key, long long v)
{
    json_object_set_new(o, key, json_integer(v));
}

static json_t *empty_row(const char *id, const char *file)
{
    return json_pack("{s:s,s:s,s:s,s:{},s:{},s:{},s:{}}", "id", id, "group", "log", "source",
                     file, "model", "hardware", "parallel", "measured");
}

static px_status set_gpu(json_t *row, const px_runlog_opts *o, const char *from_log,
                         long long gpus, const char *file, px_error *err)
{
    const char *gpu = o->gpu ? o->gpu : from_log ? from_log : o->gpu_default;
    if (!gpu)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "hardware.gpu: the log does not name the GPU: give it (calibrate "
                            "--gpu-type H100, A100, ...)");
    json_t *h = json_object_get(row, "hardware");
    json_object_set_new(h, "gpu", json_string(gpu));
    set_int(h, "num_gpus", gpus);
    json_object_set_new(h, "gpus_per_node",
                        o->gpus_per_node > 0 ? json_integer(o->gpus_per_node) : json_null());
    json_object_set_new(h, "gpu_memory_gb", json_null());
    return PX_OK;
}

/* ---- Megatron-LM ---- */

static bool megatron_args_start(const char *s)
{
    return strstr(s, "------------------------ arguments ------------------------") != NULL;
}

/* "  name ....... value" of the arguments block into kv. */
static void megatron_args(const text *t, int from, json_t *kv)
{
    for (int i = from; i < t->n && !strstr(t->line[i], "end of arguments"); i++) {
        const char *s = t->line[i];
        if (s[0] != ' ' || s[1] != ' ' || !(isalpha((unsigned char)s[2]) || s[2] == '_'))
            continue;
        const char *name = s + 2, *p = name;
        while (*p && (isalnum((unsigned char)*p) || *p == '_'))
            p++;
        size_t nlen = (size_t)(p - name);
        while (*p == ' ' || *p == '.')
            p++;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(nlen < 127 ? nlen : 127), name);
        json_object_set_new(kv, key, json_string(p));
    }
}

static const char *megatron_precision(json_t *kv)
{
    const char *fp8 = val(kv, "fp8"), *recipe = val(kv, "fp8_recipe");
    if (!is_none(fp8)) {
        if (recipe && !strcmp(recipe, "mxfp8"))
            return "MXFP8";
        if (recipe && !strcmp(recipe, "tensorwise"))
            return "FP8-CS";
        if (recipe && !strcmp(recipe, "blockwise"))
            return "FP8 fine-grained";
        return "FP8";
    }
    if (is_true(val(kv, "fp16")))
        return "fp16";
    return "bf16";
}

static px_status megatron_model(json_t *kv, json_t *m, const char *file, long long seq,
                                px_error *err)
{
    long long L, h, heads, ffn, groups, vocab, kvc, experts, topk, moe_ffn;
    px_status st;
    if ((st = need_int(kv, "num_layers", file, &L, err)) ||
        (st = need_int(kv, "hidden_size", file, &h, err)) ||
        (st = need_int(kv, "num_attention_heads", file, &heads, err)))
        return st;
    bool swiglu = is_true(val(kv, "swiglu"));
    int_of(kv, "ffn_hidden_size", 4 * h, &ffn);
    int_of(kv, "num_query_groups", heads, &groups);
    if (!is_true(val(kv, "group_query_attention")))
        groups = heads;
    if (!int_of(kv, "padded_vocab_size", 0, &vocab) || vocab <= 0)
        int_of(kv, "vocab_size", 0, &vocab);
    if (vocab <= 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "padded_vocab_size / vocab_size: neither is logged as a number");
    int_of(kv, "kv_channels", h / heads, &kvc);
    int_of(kv, "num_experts", 0, &experts);
    set_int(m, "layers", L);
    set_int(m, "hidden", h);
    set_int(m, "ffn", ffn);
    set_int(m, "heads", heads);
    set_int(m, "kv_heads", groups);
    set_int(m, "vocab", vocab);
    set_int(m, "seq_len", seq);
    char notes[96];
    snprintf(notes, sizeof notes, "%s%s", swiglu ? "SwiGLU" : "GeLU", "");
    if (kvc != h / heads)
        snprintf(notes + strlen(notes), sizeof notes - strlen(notes), ", head_dim %lld", kvc);
    json_object_set_new(m, "arch_notes", json_string(notes));
    if (experts > 0) {
        int_of(kv, "moe_router_topk", 2, &topk);
        int_of(kv, "moe_ffn_hidden_size", ffn, &moe_ffn);
        json_object_set_new(m, "moe", json_pack("{s:I,s:I,s:I,s:i,s:I}", "experts",
                                                (json_int_t)experts, "top_k", (json_int_t)topk,
                                                "expert_ffn", (json_int_t)moe_ffn,
                                                "shared_experts", 0, "moe_layers",
                                                (json_int_t)L));
    } else {
        json_object_set_new(m, "moe", json_null());
    }
    return PX_OK;
}

/* The step times of the iteration lines (seconds). */
static int megatron_steps(const text *t, double *steps, int max)
{
    int n = 0;
    for (int i = 0; i < t->n && n < max; i++) {
        double ms = number_after(t->line[i], "elapsed time per iteration (ms):");
        if (isfinite(ms) && ms > 0)
            steps[n++] = ms / 1000.0;
    }
    return n;
}

static px_status megatron_parallel(json_t *kv, json_t *p, const char *file, long long *gpus,
                                   long long *gbs, px_error *err)
{
    long long tp, pp, cp, ep, mbs, vpp, world;
    px_status st;
    if ((st = need_int(kv, "world_size", file, &world, err)) ||
        (st = need_int(kv, "micro_batch_size", file, &mbs, err)) ||
        (st = need_int(kv, "global_batch_size", file, gbs, err)))
        return st;
    int_of(kv, "tensor_model_parallel_size", 1, &tp);
    int_of(kv, "pipeline_model_parallel_size", 1, &pp);
    int_of(kv, "context_parallel_size", 1, &cp);
    int_of(kv, "expert_model_parallel_size", 1, &ep);
    int_of(kv, "virtual_pipeline_model_parallel_size", 0, &vpp);
    if (tp < 1 || pp < 1 || cp < 1 || world % (tp * pp * cp) != 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "world_size %lld is not a multiple of tensor x pipeline x context "
                            "parallel sizes (%lld x %lld x %lld)", world, tp, pp, cp);
    long long dp = world / (tp * pp * cp);
    *gpus = world;
    set_int(p, "tp", tp);
    set_int(p, "pp", pp);
    set_int(p, "cp", cp);
    set_int(p, "ep", ep);
    set_int(p, "dp", dp);
    json_object_set_new(p, "vpp", vpp > 1 ? json_integer(vpp) : json_null());
    set_int(p, "micro_batch", mbs);
    set_int(p, "global_batch", *gbs);
    json_object_set_new(p, "sp", json_boolean(is_true(val(kv, "sequence_parallel"))));
    json_object_set_new(p, "zero_stage",
                        json_integer(is_true(val(kv, "use_distributed_optimizer")) ? 1 : 0));
    const char *rc = val(kv, "recompute_granularity");
    json_object_set_new(p, "recompute", json_string(is_none(rc) ? "none" : rc));
    return PX_OK;
}

static px_status megatron_row(const text *t, int args_at, const char *file,
                              const px_runlog_opts *o, json_t *row, px_error *err)
{
    json_t *kv = json_object();
    if (!kv)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    megatron_args(t, args_at + 1, kv);
    long long seq, gpus = 0, gbs = 0;
    px_status st = need_int(kv, "seq_length", file, &seq, err);
    if (st == PX_OK)
        st = megatron_model(kv, json_object_get(row, "model"), file, seq, err);
    if (st == PX_OK)
        st = megatron_parallel(kv, json_object_get(row, "parallel"), file, &gpus, &gbs, err);
    if (st == PX_OK)
        st = set_gpu(row, o, NULL, gpus, file, err);
    double *steps = st == PX_OK ? malloc(MAX_STEPS * sizeof *steps) : NULL;
    int n = steps ? megatron_steps(t, steps, MAX_STEPS) : 0;
    if (st == PX_OK && n == 0)
        st = px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                          "no iteration lines (\"elapsed time per iteration (ms): X\"): the "
                          "log must include training iterations");
    if (st == PX_OK) {
        double step = steady_median(steps, n);
        json_t *me = json_object_get(row, "measured");
        json_object_set_new(me, "step_time_s", json_real(step));
        json_object_set_new(me, "tokens_per_sec_per_gpu",
                            json_real((double)gbs * (double)seq / step / (double)gpus));
        set_provenance(row, megatron_precision(kv), "Megatron-LM", "iteration", n);
    }
    free(steps);
    json_decref(kv);
    return st;
}

/* ---- torchtitan ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* "[section]" and "key = value" lines into kv as "section.key" -> value
 * (quotes removed). */
static void toml_lines(const text *t, json_t *kv)
{
    char section[128] = "";
    for (int i = 0; i < t->n; i++) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", t->line[i]);
        char *s = trim(buf);
        size_t n = strlen(s);
        if (n > 2 && s[0] == '[' && s[n - 1] == ']' &&
            strspn(s + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
                n - 2) {
            snprintf(section, sizeof section, "%.*s", (int)(n - 2), s + 1);
            continue;
        }
        char *eq = strchr(s, '=');
        size_t klen = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (!section[0] || !eq || klen == 0 || trim(s + klen) != eq)
            continue;
        s[klen] = '\0';
        char *v = trim(eq + 1);
        if (*v == '"' || *v == '\'') {
            char *close = strchr(v + 1, *v);
            if (close)
                *close = '\0';
            v++;
        } else {
            char *hash = strchr(v, '#');
            if (hash)
                *hash = '\0';
            v = trim(v);
        }
        char key[300];
        snprintf(key, sizeof key, "%s.%s", section, s);
        json_object_set_new(kv, key, json_string(v));
    }
}

/* "key=number" of a Python repr (the key not inside a longer name). */
static double kwarg(const char *s, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = strstr(s, key); p; p = strstr(p + 1, key))
        if ((p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) && p[k] == '=')
            return number_after(p + k + 1, "");
    return NAN;
}

static const char *gpu_in(const char *s)
{
    static const char *const gpus[] = {"GB300", "GB200", "B300", "B200", "H200", "H800",
                                       "H100",  "A800",  "A100", "V100", NULL};
    for (int i = 0; gpus[i]; i++)
        if (strstr(s, gpus[i]))
            return gpus[i];
    return NULL;
}

/* The GPUs of the device mesh line, 0 when absent. */
static long long mesh_gpus(const text *t)
{
    for (int i = 0; i < t->n; i++) {
        const char *s = strstr(t->line[i], "device mesh with");
        const char *last = s ? strrchr(s, '[') : NULL;
        if (!last)
            continue;
        long long g = 1;
        for (char *p = (char *)last + 1, *end; *p && *p != ']'; p = end) {
            long long d = strtoll(p, &end, 10);
            if (end == p) {
                end = p + 1;
                continue;
            }
            g *= d > 0 ? d : 1;
        }
        return g;
    }
    return 0;
}

/* Llama's FFN width from dim, multiple_of and ffn_dim_multiplier
 * (torchtitan's FeedForward, as Meta's reference model computes it). */
static long long llama_ffn(double dim, double multiple_of, double mult)
{
    long long hidden = (long long)(2.0 * 4.0 * dim / 3.0);
    if (isfinite(mult) && mult > 0)
        hidden = (long long)(mult * (double)hidden);
    long long m = multiple_of > 0 ? (long long)multiple_of : 256;
    return m * ((hidden + m - 1) / m);
}

static px_status titan_model(const text *t, json_t *m, long long seq, const char *file,
                             px_error *err)
{
    const char *args = NULL;
    for (int i = 0; i < t->n && !args; i++)
        if (strstr(t->line[i], "ModelArgs(") && strstr(t->line[i], "n_layers="))
            args = t->line[i];
    double dim = args ? kwarg(args, "dim") : NAN, L = args ? kwarg(args, "n_layers") : NAN,
           heads = args ? kwarg(args, "n_heads") : NAN;
    if (!isfinite(dim) || !isfinite(L) || !isfinite(heads))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "model: no model arguments line (\"...ModelArgs(dim=..., "
                            "n_layers=..., n_heads=...)\", logged when torchtitan builds the "
                            "model)");
    double kvh = kwarg(args, "n_kv_heads"), vocab = kwarg(args, "vocab_size");
    if (!isfinite(vocab) || vocab <= 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "model.vocab_size: not in the model arguments line");
    set_int(m, "layers", (long long)L);
    set_int(m, "hidden", (long long)dim);
    set_int(m, "ffn", llama_ffn(dim, kwarg(args, "multiple_of"), kwarg(args, "ffn_dim_multiplier")));
    set_int(m, "heads", (long long)heads);
    set_int(m, "kv_heads", isfinite(kvh) && kvh > 0 ? (long long)kvh : (long long)heads);
    set_int(m, "vocab", (long long)vocab);
    set_int(m, "seq_len", seq);
    json_object_set_new(m, "moe", json_null());
    json_object_set_new(m, "arch_notes", json_string("SwiGLU"));
    return PX_OK;
}

static long long kv_int(json_t *kv, const char *key, long long dflt)
{
    long long v;
    return int_of(kv, key, dflt, &v) ? v : dflt;
}

static px_status titan_parallel(const text *t, json_t *kv, json_t *p, const char *file,
                                long long *gpus, px_error *err)
{
    long long tp = kv_int(kv, "parallelism.tensor_parallel_degree", 1),
              pp = kv_int(kv, "parallelism.pipeline_parallel_degree", 1),
              cp = kv_int(kv, "parallelism.context_parallel_degree", 1),
              rep = kv_int(kv, "parallelism.data_parallel_replicate_degree", 1),
              shard = kv_int(kv, "parallelism.data_parallel_shard_degree", -1);
    long long local = kv_int(kv, "training.local_batch_size",
                             kv_int(kv, "training.batch_size", 0));
    if (local <= 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "training.local_batch_size: missing from the job config (the TOML "
                            "given alongside or echoed in the log)");
    if (tp < 1 || pp < 1 || cp < 1 || rep < 1)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallelism: every degree must be >= 1 (data_parallel_shard_degree"
                            " may be -1)");
    if (shard < 1) {
        long long world = mesh_gpus(t);
        if (world <= 0 || world % (tp * pp * cp * rep) != 0)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "parallelism.data_parallel_shard_degree: -1 (the remaining "
                                "GPUs) and no device mesh line (\"Building N-D device mesh "
                                "with [...], [...]\") to count them: give the degree");
        shard = world / (tp * pp * cp * rep);
    }
    long long dp = rep * shard;
    *gpus = tp * pp * cp * dp;
    long long gbs = kv_int(kv, "training.global_batch_size", -1);
    set_int(p, "tp", tp);
    set_int(p, "pp", pp);
    set_int(p, "cp", cp);
    set_int(p, "dp", dp);
    set_int(p, "ep", 1);
    set_int(p, "micro_batch",
            pp > 1 ? kv_int(kv, "parallelism.pipeline_parallel_microbatch_size", 1) : local);
    set_int(p, "global_batch", gbs > 0 ? gbs : local * dp);
    json_object_set_new(p, "fsdp", shard > 1 ? (rep > 1 ? json_integer(shard) : json_true())
                                             : json_false());
    json_object_set_new(p, "zero_stage", shard > 1 ? json_null() : json_integer(0));
    const char *mode = val(kv, "activation_checkpoint.mode");
    json_object_set_new(p, "recompute", json_string(mode ? mode : "selective"));
    return PX_OK;
}

static const char *titan_precision(json_t *kv)
{
    const char *conv = val(kv, "model.converters"), *old = val(kv, "float8.enable_float8_linear");
    const char *recipe = val(kv, "float8.recipe_name");
    if (!recipe)
        recipe = val(kv, "quantize.linear.float8.recipe_name");
    if ((conv && strstr(conv, "float8")) || is_true(old))
        return recipe && strstr(recipe, "rowwise") ? "float8 rowwise" : "float8 tensorwise";
    return "bf16";
}

/* tokens/s per GPU and MFU (%) of the step lines. */
static int titan_steps(const text *t, double *tps, double *mfu, int max)
{
    int n = 0;
    for (int i = 0; i < t->n && n < max; i++) {
        const char *s = t->line[i];
        if (!strstr(s, "step:") || strstr(s, "validate step") || !strstr(s, "tps:"))
            continue;
        tps[n] = number_after(s, "tps:");
        mfu[n] = number_after(s, "mfu:");
        if (isfinite(tps[n]) && tps[n] > 0)
            n++;
    }
    return n;
}

static px_status titan_row(const text *t, const text *cfg, const char *file,
                           const px_runlog_opts *o, json_t *row, px_error *err)
{
    json_t *kv = json_object();
    double *tps = malloc(MAX_STEPS * sizeof *tps), *mfu = malloc(MAX_STEPS * sizeof *mfu);
    if (!kv || !tps || !mfu) {
        json_decref(kv);
        free(tps);
        free(mfu);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    toml_lines(t, kv);
    if (cfg)
        toml_lines(cfg, kv);
    long long seq = kv_int(kv, "training.seq_len", 0), gpus = 0;
    const char *gpu = NULL;
    for (int i = 0; i < t->n && !gpu; i++)
        if (strstr(t->line[i], "capacity:"))
            gpu = gpu_in(t->line[i]);
    px_status st = seq > 0 ? PX_OK
                           : px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                          "training.seq_len: missing from the job config");
    if (st == PX_OK)
        st = titan_model(t, json_object_get(row, "model"), seq, file, err);
    if (st == PX_OK)
        st = titan_parallel(t, kv, json_object_get(row, "parallel"), file, &gpus, err);
    if (st == PX_OK)
        st = set_gpu(row, o, gpu, gpus, file, err);
    int n = st == PX_OK ? titan_steps(t, tps, mfu, MAX_STEPS) : 0;
    if (st == PX_OK && n == 0)
        st = px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                          "no step lines (\"step: N  loss: ...  tps: T ...\"): the log must "
                          "include training steps");
    if (st == PX_OK) {
        json_t *me = json_object_get(row, "measured");
        double m = steady_median(mfu, n);
        json_object_set_new(me, "tokens_per_sec_per_gpu", json_real(steady_median(tps, n)));
        json_object_set_new(me, "mfu", isfinite(m) ? json_real(m / 100.0) : json_null());
        set_provenance(row, titan_precision(kv), "torchtitan", "step", n);
    }
    json_decref(kv);
    free(tps);
    free(mfu);
    return st;
}

px_status px_runlog_row(const char *log_path, const char *config_path, const px_runlog_opts *o,
                        json_t **row, px_error *err)
{
    *row = NULL;
    text t, cfg = {0};
    px_status st = text_read(log_path, &t, err);
    if (st != PX_OK)
        return st;
    if (config_path && (st = text_read(config_path, &cfg, err)) != PX_OK) {
        text_free(&t);
        return st;
    }
    const char *base = strrchr(log_path, '/');
    char id[96];
    snprintf(id, sizeof id, "log-%.90s", base ? base + 1 : log_path);
    json_t *r = empty_row(id, log_path);
    int args_at = -1;
    bool titan = false;
    for (int i = 0; i < t.n && args_at < 0 && !titan; i++) {
        if (megatron_args_start(t.line[i]))
            args_at = i;
        else if (strstr(t.line[i], "ModelArgs(") || strstr(t.line[i], "tps:"))
            titan = true;
    }
    if (!r)
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    else if (args_at >= 0)
        st = megatron_row(&t, args_at, log_path, o, r, err);
    else if (titan)
        st = titan_row(&t, config_path ? &cfg : NULL, log_path, o, r, err);
    else
        st = px_error_set(err, PX_ERR_INVALID, log_path, 0, 0,
                          "neither a Megatron-LM / NeMo log (no \"---- arguments ----\" block) "
                          "nor a torchtitan log (no model arguments or \"tps:\" step lines)");
    text_free(&t);
    text_free(&cfg);
    if (st != PX_OK) {
        json_decref(r);
        return st;
    }
    *row = r;
    return PX_OK;
}
