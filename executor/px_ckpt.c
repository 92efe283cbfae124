/* px_ckpt.c — sharded checkpoints (see px_ckpt.h). */
#include "px_ckpt.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/stat.h>

#include <jansson.h>

#include "px_exec_internal.h"
#include "px_io.h"
#include "px_jfield.h"
#include "px_plan_json.h"
#include "px_watchdog.h"

#define CKPT_KIND "parallax-checkpoint"
#define CKPT_VERSION 3 /* 3: the norms' and biases' weight decay (vector_wd_mult) too */
#define HASH_HEX_DIGITS 16
#define SHARD_MAGIC "PXCKPT01"
#define ENDIAN_MARK 0x01020304u

/* The shard header, in the host's byte order (ENDIAN_MARK tells another). */
typedef struct {
    char magic[8];
    uint32_t endian, version;
    int64_t rank, step, n_weights, n_moments, weight_elem_bytes, has_master, adam_steps;
} shard_header;

static uint64_t fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The plan's identity: its model, layout, rank order and batch, not its
 * prediction (a re-scored plan still fits the same checkpoint). */
static px_status plan_fingerprint(const px_exec *ex, char *buf, size_t n, px_error *err)
{
    json_t *root = NULL;
    PX_TRY(px_plan_to_json(&ex->plan, &root, err));
    json_t *id = json_object();
    static const char *const keys[] = {"model", "parallel", "rank_order", "batch"};
    for (int i = 0; i < 4; i++)
        json_object_set(id, keys[i], json_object_get(root, keys[i]));
    char *text = json_dumps(id, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(id);
    json_decref(root);
    if (!text)
        return PX_FAIL(err, PX_ERR_NOMEM, "checkpoint: out of memory");
    snprintf(buf, n, "%016" PRIx64, fnv1a64(text, strlen(text)));
    free(text);
    return PX_OK;
}

static int64_t weight_bytes(const px_exec *ex)
{
    return ex->n_weights * px_dtype_bytes(ex->act_dtype);
}

static int64_t shard_bytes(const px_exec *ex)
{
    int64_t moments = ex->n_moments * (int64_t)sizeof(float);
    return (int64_t)sizeof(shard_header) + weight_bytes(ex) + moments * (ex->master ? 3 : 2);
}

/* This rank's state as one buffer: header, weights, master, m, v. */
static px_status shard_pack(px_exec *ex, int64_t step, unsigned char **out, int64_t *n,
                            px_error *err)
{
    *n = shard_bytes(ex);
    unsigned char *buf = malloc((size_t)*n);
    if (!buf)
        return PX_FAIL(err, PX_ERR_NOMEM, "checkpoint: out of memory for the shard");
    shard_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SHARD_MAGIC, 8);
    h.endian = ENDIAN_MARK;
    h.version = CKPT_VERSION;
    h.rank = ex->world_rank;
    h.step = step;
    h.n_weights = ex->n_weights;
    h.n_moments = ex->n_moments;
    h.weight_elem_bytes = px_dtype_bytes(ex->act_dtype);
    h.has_master = ex->master != NULL;
    h.adam_steps = ex->adam_steps;
    memcpy(buf, &h, sizeof h);
    unsigned char *p = buf + sizeof h;
    int64_t mb = ex->n_moments * (int64_t)sizeof(float);
    ex->be->download(ex->be, p, ex->params, weight_bytes(ex));
    p += weight_bytes(ex);
    if (ex->master) { /* each whole: its host share first under offload */
        px_ex_state_get(ex, PX_STATE_MASTER, p);
        p += mb;
    }
    px_ex_state_get(ex, PX_STATE_M, p);
    px_ex_state_get(ex, PX_STATE_V, p + mb);
    *out = buf;
    return PX_OK;
}

/* Every rank learns whether any failed: the lowest failing rank, or -1. */
static px_status agree(int failed, int *first_bad, px_error *err)
{
    int rank = 0, lowest = INT_MAX;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int mine = failed ? rank : INT_MAX;
    px_watchdog_enter("MPI_Allreduce (checkpoint status)");
    px_status st = px_mpi_check(MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN,
                                              MPI_COMM_WORLD), "MPI_Allreduce (checkpoint)", err);
    px_watchdog_leave();
    *first_bad = lowest == INT_MAX ? -1 : lowest;
    return st;
}

static px_status make_dir(const char *path, px_error *err)
{
    return px_io_make_dir(path, err);
}

/* Every optimizer setting a resumed run must share (a float each, exact in
 * JSON's 17 digits): a mismatch is refused by name. */
typedef struct {
    const char *key, *option;
    size_t offset;
} opt_field;
static const opt_field opt_fields[] = {
    {"lr", "--lr", offsetof(px_exec_options, lr)},
    {"beta1", "--adam-beta1", offsetof(px_exec_options, beta1)},
    {"beta2", "--adam-beta2", offsetof(px_exec_options, beta2)},
    {"adam_eps", "--adam-eps", offsetof(px_exec_options, adam_eps)},
    {"weight_decay", "--weight-decay", offsetof(px_exec_options, weight_decay)},
    {"vector_wd_mult", "--weight-decay-all", offsetof(px_exec_options, vector_wd_mult)},
};
#define N_OPT_FIELDS ((int)(sizeof opt_fields / sizeof opt_fields[0]))

static float opt_value(const px_exec_options *o, int i)
{
    float v;
    memcpy(&v, (const char *)o + opt_fields[i].offset, sizeof v);
    return v;
}

static json_t *optimizer_json(const px_exec_options *o)
{
    json_t *obj = json_object();
    for (int i = 0; i < N_OPT_FIELDS; i++)
        json_object_set_new(obj, opt_fields[i].key, json_real((double)opt_value(o, i)));
    return obj;
}

/* Sequences consumed before step (the data position a resume starts at). */
static json_int_t data_position(const px_exec *ex, int64_t step)
{
    return (json_int_t)(step * (int64_t)(ex->global_tokens / (double)ex->s));
}

static px_status write_manifest(px_exec *ex, const char *iter_dir, int64_t step,
                                const uint64_t *hashes, const int64_t *sizes, px_error *err)
{
    char fp[32], path[8192];
    PX_TRY(plan_fingerprint(ex, fp, sizeof fp, err));
    json_t *shards = json_array();
    for (int r = 0; r < ex->world_size; r++) {
        char file[32], hex[32];
        snprintf(file, sizeof file, "rank%05d.bin", r);
        snprintf(hex, sizeof hex, "%016" PRIx64, hashes[r]);
        json_array_append_new(shards, json_pack("{s:i, s:s, s:I, s:s}", "rank", r, "file", file,
                                                "bytes", (json_int_t)sizes[r], "fnv1a64", hex));
    }
    json_t *m = json_pack("{s:s, s:i, s:I, s:i, s:s, s:s, s:I, s:o, s:I, s:o}", "kind",
                          CKPT_KIND, "version", CKPT_VERSION, "step", (json_int_t)step,
                          "world_size", ex->world_size, "plan_fingerprint", fp, "dtype",
                          px_dtype_name(ex->act_dtype), "seed", (json_int_t)ex->opt.seed,
                          "optimizer", optimizer_json(&ex->opt), "data_position_sequences",
                          data_position(ex, step), "shards", shards);
    if (!m)
        return PX_FAIL(err, PX_ERR_NOMEM, "checkpoint: cannot build the manifest");
    snprintf(path, sizeof path, "%s/manifest.json", iter_dir);
    px_status st = px_io_write_json(path, m, JSON_SORT_KEYS | JSON_INDENT(2), err);
    json_decref(m);
    return st;
}

px_status px_ckpt_save(px_exec *ex, const char *dir, int64_t step, px_error *err)
{
    if (strlen(dir) > 3000)
        return PX_FAIL(err, PX_ERR_INVALID, "checkpoint directory: path too long");
    char iter_dir[4096], path[8192];
    snprintf(iter_dir, sizeof iter_dir, "%s/iter_%07lld", dir, (long long)step);
    px_status st = PX_OK;
    if (ex->world_rank == 0) {
        st = make_dir(dir, err);
        if (!st)
            st = make_dir(iter_dir, err);
    }
    int bad = -1;
    PX_TRY(agree(st != PX_OK, &bad, err));
    if (bad >= 0)
        return st ? st : PX_FAIL(err, PX_ERR_IO, "checkpoint: rank 0 could not create %s",
                                 iter_dir);
    unsigned char *buf = NULL;
    int64_t n = 0;
    uint64_t hash = 0;
    st = shard_pack(ex, step, &buf, &n, err);
    if (!st) {
        hash = fnv1a64(buf, (size_t)n);
        snprintf(path, sizeof path, "%s/rank%05d.bin", iter_dir, ex->world_rank);
        st = px_io_write_atomic(path, buf, (size_t)n, err);
    }
    free(buf);
    PX_TRY(agree(st != PX_OK, &bad, err));
    if (bad >= 0)
        return st ? st : PX_FAIL(err, PX_ERR_IO, "checkpoint: rank %d could not write its "
                                 "shard of step %lld", bad, (long long)step);
    /* Rank 0 collects every shard's size and checksum for the manifest. */
    uint64_t *hashes = ex->world_rank == 0 ? calloc((size_t)ex->world_size, sizeof *hashes) : NULL;
    int64_t *sizes = ex->world_rank == 0 ? calloc((size_t)ex->world_size, sizeof *sizes) : NULL;
    px_watchdog_enter("MPI_Gather (checkpoint checksums)");
    int rc = MPI_Gather(&hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = MPI_Gather(&n, 1, MPI_INT64_T, sizes, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    px_watchdog_leave();
    st = px_mpi_check(rc, "MPI_Gather (checkpoint)", err);
    if (!st && ex->world_rank == 0) {
        if (!hashes || !sizes)
            st = PX_FAIL(err, PX_ERR_NOMEM, "checkpoint: out of memory");
        else
            st = write_manifest(ex, iter_dir, step, hashes, sizes, err);
        if (!st) { /* the pointer to the newest complete checkpoint, last */
            char latest[64];
            int len = snprintf(latest, sizeof latest, "iter_%07lld\n", (long long)step);
            snprintf(path, sizeof path, "%s/latest", dir);
            st = px_io_write_atomic(path, latest, (size_t)len, err);
        }
    }
    free(hashes);
    free(sizes);
    px_status st2 = agree(st != PX_OK, &bad, err);
    if (st)
        return st;
    if (st2)
        return st2;
    return bad >= 0 ? PX_FAIL(err, PX_ERR_IO, "checkpoint: rank 0 could not write the "
                              "manifest of step %lld", (long long)step)
                    : PX_OK;
}

/* ---- loading ------------------------------------------------------------- */

static bool is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The iter_* directory to load: dir itself (it has a manifest), or the one
 * dir/latest names. */
static px_status resolve_dir(const char *dir, char *iter_dir, size_t n, px_error *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (is_file(path)) {
        snprintf(iter_dir, n, "%s", dir);
        return PX_OK;
    }
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return px_error_set(err, PX_ERR_IO, dir, 0, 0,
                            "no checkpoint here: neither latest nor manifest.json (a save "
                            "that did not complete leaves no manifest)");
    /* exactly what px_ckpt_save writes: "iter_" and the step (at least 7
     * digits) and one newline; no blank, NUL, second line or other text */
    char name[64];
    size_t len = fread(name, 1, sizeof name - 1, f);
    fclose(f);
    name[len] = '\0';
    long long it = -1;
    size_t digits = len > 6 ? strspn(name + 5, "0123456789") : 0;
    if (!strncmp(name, "iter_", 5) && digits >= 7 && digits <= 12 && len == 5 + digits + 1 &&
        name[len - 1] == '\n')
        it = strtoll(name + 5, NULL, 10);
    char canon[64];
    snprintf(canon, sizeof canon, "iter_%07lld\n", it);
    if (it < 0 || it > PX_EXEC_MAX_STEPS || strcmp(name, canon)) {
        for (size_t i = 0; i < len; i++) /* printable in the message */
            if (name[i] < 0x20 || name[i] > 0x7e)
                name[i] = '?';
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "expected one line \"iter_NNNNNNN\" (the step, 0..%lld, in at least "
                            "7 digits) and a newline, got \"%.40s\"", (long long)PX_EXEC_MAX_STEPS,
                            name);
    }
    snprintf(iter_dir, n, "%s/iter_%07lld", dir, it);
    snprintf(path, sizeof path, "%s/manifest.json", iter_dir);
    if (!is_file(path))
        return px_error_set(err, PX_ERR_INVALID, iter_dir, 0, 0,
                            "torn checkpoint: no manifest.json (refused)");
    return PX_OK;
}

typedef struct {
    int64_t step, bytes;
    char file[64];
    uint64_t hash;
} shard_entry;

/* The shortest decimal that reads back as the float x (6 to 9 digits). */
static void float_text(float x, char *buf, size_t n)
{
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, n, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x)
            return;
    }
}

/* The manifest's optimizer object against this run's settings: every key,
 * a number each, equal as a float; a mismatch names the setting. */
static px_status check_optimizer(const px_exec *ex, json_t *opt, const char *path,
                                 px_error *err)
{
    if (!json_is_object(opt) || json_object_size(opt) != (size_t)N_OPT_FIELDS)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "malformed manifest: optimizer: expected an object of exactly lr, "
                            "beta1, beta2, adam_eps, weight_decay, vector_wd_mult");
    for (int i = 0; i < N_OPT_FIELDS; i++) {
        json_t *v = json_object_get(opt, opt_fields[i].key);
        if (!json_is_number(v))
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "malformed manifest: optimizer.%s: expected a number",
                                opt_fields[i].key);
        double saved = json_number_value(v);
        float mine = opt_value(&ex->opt, i);
        if ((float)saved != mine) {
            char a[32], b[32];
            float_text((float)saved, a, sizeof a);
            float_text(mine, b, sizeof b);
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "mismatched checkpoint (refused): optimizer.%s: %s, this run "
                                "has %s %s", opt_fields[i].key, a, opt_fields[i].option, b);
        }
    }
    return PX_OK;
}

/* "fnv1a64": exactly 16 lower-case hex digits. */
static bool parse_hash(const char *hex, uint64_t *out)
{
    if (strlen(hex) != HASH_HEX_DIGITS || strspn(hex, "0123456789abcdef") != HASH_HEX_DIGITS)
        return false;
    *out = strtoull(hex, NULL, 16);
    return true;
}

/* This rank's entry of the manifest's shards into *e. */
static px_status check_shard_entry(const px_exec *ex, json_t *me, const char *path,
                                   shard_entry *e, px_error *err)
{
    const char *file = "", *hex = "";
    json_int_t rank = -1, bytes = -1;
    json_error_t je;
    char want[32];
    snprintf(want, sizeof want, "rank%05d.bin", ex->world_rank);
    if (json_unpack_ex(me, &je, JSON_STRICT, "{s:I, s:s, s:I, s:s}", "rank", &rank, "file",
                       &file, "bytes", &bytes, "fnv1a64", &hex) != 0 ||
        rank != ex->world_rank || strcmp(file, want) || bytes < 0 ||
        !parse_hash(hex, &e->hash))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "malformed manifest: shards[%d]: expected exactly {rank: %d, file: "
                            "\"%s\", bytes: an integer >= 0, fnv1a64: 16 lower-case hex "
                            "digits}", ex->world_rank, ex->world_rank, want);
    e->bytes = bytes;
    snprintf(e->file, sizeof e->file, "%s", file);
    return PX_OK;
}

/* The manifest against this run, every field strictly (unknown keys, a
 * value out of its range or different from this run's are refused by
 * name); this rank's entry into *e. */
static px_status check_manifest(px_exec *ex, const char *path, shard_entry *e, px_error *err)
{
    json_t *m = NULL;
    PX_TRY(px_jf_load_file(path, &m, err));
    const char *kind = "", *fp = "", *dtype = "";
    json_int_t version = 0, world = 0, step = -1, seed = 0, position = -1;
    json_t *shards = NULL, *optimizer = NULL;
    json_error_t je;
    px_status st = PX_OK;
    if (json_unpack_ex(m, &je, JSON_STRICT, "{s:s, s:I, s:I, s:I, s:s, s:s, s:I, s:o, s:I, s:o}",
                       "kind", &kind, "version", &version, "step", &step, "world_size", &world,
                       "plan_fingerprint", &fp, "dtype", &dtype, "seed", &seed, "optimizer",
                       &optimizer, "data_position_sequences", &position, "shards",
                       &shards) != 0) {
        st = px_error_set(err, PX_ERR_INVALID, path, 0, 0, "malformed manifest: %s", je.text);
        goto out;
    }
    char mine[32];
    st = plan_fingerprint(ex, mine, sizeof mine, err);
    if (st)
        goto out;
    const char *what = NULL;
    char detail[256] = "";
    if (strcmp(kind, CKPT_KIND) || version != CKPT_VERSION)
        what = "kind/version", snprintf(detail, sizeof detail, "\"%.40s\" v%lld, expected \"%s\" "
                                        "v%d", kind, (long long)version, CKPT_KIND,
                                        CKPT_VERSION);
    else if (step < 0 || step > PX_EXEC_MAX_STEPS)
        what = "step", snprintf(detail, sizeof detail, "%lld is out of range (allowed: 0..%lld)",
                                (long long)step, (long long)PX_EXEC_MAX_STEPS);
    else if (world != ex->world_size)
        what = "world_size", snprintf(detail, sizeof detail, "%lld ranks, this run has %d",
                                      (long long)world, ex->world_size);
    else if (strcmp(fp, mine))
        what = "plan_fingerprint", snprintf(detail, sizeof detail, "saved with another plan "
                                            "(model, layout or batch differ)");
    else if (strcmp(dtype, px_dtype_name(ex->act_dtype)))
        what = "dtype", snprintf(detail, sizeof detail, "%.40s, this run stores %s", dtype,
                                 px_dtype_name(ex->act_dtype));
    else if ((uint64_t)seed != ex->opt.seed)
        what = "seed", snprintf(detail, sizeof detail, "%lld, this run has --seed %llu",
                                (long long)seed, (unsigned long long)ex->opt.seed);
    else if (position != data_position(ex, (int64_t)step))
        what = "data_position_sequences", snprintf(detail, sizeof detail, "%lld, step %lld of "
                                                   "this plan is at %lld", (long long)position,
                                                   (long long)step,
                                                   (long long)data_position(ex, (int64_t)step));
    else if (!json_is_array(shards) || json_array_size(shards) != (size_t)ex->world_size)
        what = "shards", snprintf(detail, sizeof detail, "expected %d entries", ex->world_size);
    if (what) {
        st = px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                          "mismatched checkpoint (refused): %s: %s", what, detail);
        goto out;
    }
    st = check_optimizer(ex, optimizer, path, err);
    if (!st)
        st = check_shard_entry(ex, json_array_get(shards, (size_t)ex->world_rank), path, e, err);
    e->step = step;
out:
    json_decref(m);
    return st;
}

/* Reads and checks this rank's shard; *out holds its bytes. */
static px_status read_shard(px_exec *ex, const char *path, const shard_entry *e,
                            unsigned char **out, px_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot open the shard: %s",
                            strerror(errno));
    int64_t want = shard_bytes(ex);
    unsigned char *buf = malloc((size_t)want + 1);
    size_t got = buf ? fread(buf, 1, (size_t)want + 1, f) : 0;
    fclose(f);
    if (!buf)
        return PX_FAIL(err, PX_ERR_NOMEM, "checkpoint: out of memory for the shard");
    const char *bad = NULL;
    if ((int64_t)got != e->bytes)
        bad = "its size differs from the manifest's (torn or truncated)";
    else if (fnv1a64(buf, got) != e->hash)
        bad = "bad checksum (the file is corrupt or was changed)";
    else if ((int64_t)got != want)
        bad = "its size does not fit this rank's parameters and optimizer state";
    shard_header h;
    if (!bad) {
        memcpy(&h, buf, sizeof h);
        if (memcmp(h.magic, SHARD_MAGIC, 8) || h.endian != ENDIAN_MARK ||
            h.version != CKPT_VERSION)
            bad = "not a shard of this format or byte order";
        else if (h.rank != ex->world_rank || h.step != e->step ||
                 h.n_weights != ex->n_weights || h.n_moments != ex->n_moments ||
                 h.weight_elem_bytes != px_dtype_bytes(ex->act_dtype) ||
                 h.has_master != (ex->master != NULL))
            bad = "its header (rank, step, sizes, dtype) does not match this rank";
        else if (h.adam_steps < 0 || h.adam_steps > h.step)
            bad = "its header's AdamW step count is not in 0..step";
    }
    if (bad) {
        free(buf);
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "checkpoint shard refused: %s",
                            bad);
    }
    *out = buf;
    return PX_OK;
}

static void shard_unpack(px_exec *ex, const unsigned char *buf)
{
    shard_header h;
    memcpy(&h, buf, sizeof h);
    const unsigned char *p = buf + sizeof h;
    int64_t mb = ex->n_moments * (int64_t)sizeof(float);
    ex->be->upload(ex->be, ex->params, p, weight_bytes(ex));
    p += weight_bytes(ex);
    if (ex->master) {
        px_ex_state_put(ex, PX_STATE_MASTER, p);
        p += mb;
    }
    px_ex_state_put(ex, PX_STATE_M, p);
    px_ex_state_put(ex, PX_STATE_V, p + mb);
    ex->adam_steps = h.adam_steps;
}

px_status px_ckpt_load(px_exec *ex, const char *dir, int64_t *step, px_error *err)
{
    if (strlen(dir) > 3000)
        return PX_FAIL(err, PX_ERR_INVALID, "checkpoint directory: path too long");
    char iter_dir[4096], path[8192];
    shard_entry e;
    memset(&e, 0, sizeof e);
    unsigned char *buf = NULL;
    px_status st = resolve_dir(dir, iter_dir, sizeof iter_dir, err);
    if (!st) {
        snprintf(path, sizeof path, "%s/manifest.json", iter_dir);
        st = check_manifest(ex, path, &e, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/%s", iter_dir, e.file);
        st = read_shard(ex, path, &e, &buf, err);
    }
    int bad = -1;
    px_status st2 = agree(st != PX_OK, &bad, err);
    if (!st && !st2 && bad < 0) {
        shard_unpack(ex, buf);
        *step = e.step;
    }
    free(buf);
    if (st)
        return st;
    if (st2)
        return st2;
    return bad >= 0 ? PX_FAIL(err, PX_ERR_INVALID, "checkpoint %s refused on rank %d", dir,
                              bad)
                    : PX_OK;
}
