/* px_cmp — comparisons for the executor tests:
 *   px_cmp losses REF.json TEST.json RTOL
 *       the `losses` arrays of two `execute --report` files: same length (> 0)
 *       and |test - ref| <= RTOL * |ref| element-wise.
 *   px_cmp weights REF_DIR TEST_DIR ATOL RTOL [MIN_ID MAX_ID]
 *       every tensor slice that any rank of TEST_DIR holds (`--dump-weights`)
 *       against the same elements of the single-rank dump REF_DIR/rank0.*;
 *       with MIN_ID MAX_ID only the tensors of ids in [MIN_ID, MAX_ID) (LoRA:
 *       the base below 2^40, the adapters above).
 *   px_cmp peak REPORT.json RANK_A RANK_B
 *       exits 0 when per-rank peak memory of RANK_A > RANK_B.
 *   px_cmp peak2 A.json RANK B.json RANK
 *       exits 0 when RANK's peak memory in A > RANK's peak memory in B.
 *   px_cmp peakclose A.json RANK B.json RANK RTOL
 *       exits 0 when RANK's peak memory in A is within RTOL (relative) of
 *       RANK's peak memory in B.
 *   px_cmp predpeak REPORT.json RTOL
 *       exits 0 when the report's predicted peak memory (the worst stage) is
 *       within RTOL of the largest per-rank measured peak.
 *   px_cmp tokens FILE N VOCAB
 *       writes N token ids < VOCAB (little-endian uint32, a fixed pseudo-random
 *       text) for `execute --data`.
 *   px_cmp differ A.json B.json [RTOL]
 *       exits 0 when the first losses of two reports differ (> RTOL relative,
 *       default 1e-4; the same data agrees to ~1e-9).
 *   px_cmp relerr REPORT.json
 *       exits 0 when every `relative_error` key of the report is the error of
 *       the prediction, (predicted - measured) / measured (within 1e-9), and
 *       at least one is a number (null only where predicted or measured is 0).
 *   px_cmp kinds REPORT.json PLAN.json
 *       exits 0 when every rank's weights, grads and optimizer bytes at its
 *       peak equal the plan's predicted memory of those kinds exactly (the
 *       cost model's bytes per parameter; one pipeline stage).
 *   px_cmp kindratio A.json B.json RANK KIND NUM DEN
 *       exits 0 when RANK's KIND bytes at peak in B, times DEN, equal those
 *       in A times NUM (B / A == NUM / DEN exactly).
 *   px_cmp differ_any A.json B.json
 *       exits 0 when some loss of A differs from B's at all (a run that is
 *       meant to round differently really did).
 * Prints what it compared; exits 0 (match), 1 (mismatch), 2 (bad input). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "px_cmp: %s:%d:%d: %s\n", path, e.line, e.column, e.text);
    return j;
}

static int cmp_losses(const char *ref_path, const char *test_path, double rtol)
{
    json_t *ref = load(ref_path), *test = load(test_path);
    if (!ref || !test)
        return 2;
    json_t *a = json_object_get(ref, "losses"), *b = json_object_get(test, "losses");
    if (!json_is_array(a) || !json_is_array(b) || json_array_size(a) == 0) {
        fprintf(stderr, "px_cmp: missing or empty losses\n");
        return 2;
    }
    if (json_array_size(a) != json_array_size(b)) {
        fprintf(stderr, "px_cmp: %zu losses vs %zu\n", json_array_size(a), json_array_size(b));
        return 1;
    }
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < json_array_size(a); i++) {
        double x = json_number_value(json_array_get(a, i));
        double y = json_number_value(json_array_get(b, i));
        double rel = fabs(y - x) / fabs(x);
        worst = rel > worst ? rel : worst;
        if (!(rel <= rtol) || !isfinite(y)) {
            fprintf(stderr, "px_cmp: step %zu: loss %.9g, reference %.9g (rel %.3g > %.3g)\n", i,
                    y, x, rel, rtol);
            bad = 1;
        }
    }
    printf("losses: %zu steps, worst relative difference %.3g (tolerance %.3g)\n",
           json_array_size(a), worst, rtol);
    json_decref(ref);
    json_decref(test);
    return bad;
}

typedef struct {
    long long id, full_rows, full_cols, row0, n_rows, col0, n_cols, offset;
} seg;

static int read_dump(const char *dir, int rank, seg **segs, int *n_segs, float **vals,
                     long long *n_vals)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rank%d.tsv", dir, rank);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int cap = 64;
    *segs = malloc((size_t)cap * sizeof **segs);
    *n_segs = 0;
    seg s;
    while (fscanf(f, "%lld %lld %lld %lld %lld %lld %lld %lld", &s.id, &s.full_rows,
                  &s.full_cols, &s.row0, &s.n_rows, &s.col0, &s.n_cols, &s.offset) == 8) {
        if (*n_segs == cap) {
            cap *= 2;
            *segs = realloc(*segs, (size_t)cap * sizeof **segs);
        }
        (*segs)[(*n_segs)++] = s;
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/rank%d.bin", dir, rank);
    f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    *n_vals = size / 4;
    *vals = malloc((size_t)(size > 0 ? size : 4));
    unsigned char *raw = malloc((size_t)(size > 0 ? size : 4));
    if (fread(raw, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        return -1;
    }
    fclose(f);
    for (long long i = 0; i < *n_vals; i++) {
        uint32_t u = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
                     (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
        memcpy(&(*vals)[i], &u, 4);
    }
    free(raw);
    return 0;
}

static int cmp_weights(const char *ref_dir, const char *test_dir, double atol, double rtol,
                       long long min_id, long long max_id)
{
    seg *rs;
    int nrs;
    float *rv;
    long long nrv;
    if (read_dump(ref_dir, 0, &rs, &nrs, &rv, &nrv)) {
        fprintf(stderr, "px_cmp: cannot read %s/rank0.{tsv,bin}\n", ref_dir);
        return 2;
    }
    long long compared = 0;
    int bad = 0, ranks = 0;
    double worst = 0.0;
    for (int r = 0;; r++) {
        seg *ts;
        int nts;
        float *tv;
        long long ntv;
        if (read_dump(test_dir, r, &ts, &nts, &tv, &ntv))
            break;
        ranks++;
        for (int i = 0; i < nts; i++) {
            const seg *t = &ts[i], *ref = NULL;
            if (t->id < min_id || t->id >= max_id)
                continue;
            for (int j = 0; j < nrs; j++)
                if (rs[j].id == t->id)
                    ref = &rs[j];
            if (!ref || ref->row0 != 0 || ref->col0 != 0 || ref->n_rows != t->full_rows ||
                ref->n_cols != t->full_cols) {
                fprintf(stderr, "px_cmp: rank %d: tensor %lld has no full reference slice\n", r,
                        t->id);
                bad = 1;
                continue;
            }
            for (long long a = 0; a < t->n_rows; a++)
                for (long long b = 0; b < t->n_cols; b++) {
                    double x = rv[ref->offset + (t->row0 + a) * ref->n_cols + t->col0 + b];
                    double y = tv[t->offset + a * t->n_cols + b];
                    double d = fabs(y - x);
                    worst = d > worst ? d : worst;
                    compared++;
                    if (!(d <= atol + rtol * fabs(x))) {
                        if (bad < 10)
                            fprintf(stderr,
                                    "px_cmp: rank %d tensor %lld [%lld, %lld]: %.9g vs "
                                    "reference %.9g\n",
                                    r, t->id, t->row0 + a, t->col0 + b, y, x);
                        bad++;
                    }
                }
        }
        free(ts);
        free(tv);
    }
    printf("weights: %d ranks, %lld elements compared, worst |diff| %.3g, %d mismatches\n",
           ranks, compared, worst, bad);
    free(rs);
    free(rv);
    if (ranks == 0 || compared == 0)
        return 2;
    return bad ? 1 : 0;
}

static long long peak_of(json_t *rep, int rank)
{
    json_t *a = json_object_get(rep, "per_rank_peak_memory_bytes");
    json_t *v = json_array_get(a, (size_t)rank);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* The report's relative errors against the formula `compare` uses too. */
/* KIND bytes of rank's breakdown at its peak; -1 when absent. */
static long long kind_of(json_t *rep, int rank, const char *kind)
{
    json_t *b = json_array_get(json_object_get(rep, "per_rank_memory_at_peak_bytes"),
                               (size_t)rank);
    json_t *v = json_object_get(b, kind);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static int cmp_kinds(const char *rep_path, const char *plan_path)
{
    json_t *r = load(rep_path), *p = load(plan_path);
    if (!r || !p)
        return 2;
    json_t *mem = json_object_get(json_object_get(p, "prediction"), "memory");
    size_t n = json_array_size(json_object_get(r, "per_rank_memory_at_peak_bytes"));
    const char *kinds[] = {"weights", "grads", "optimizer"};
    int bad = n == 0 ? 2 : 0;
    for (size_t k = 0; k < 3; k++) {
        char key[64];
        snprintf(key, sizeof key, "%s_bytes", kinds[k]);
        json_t *pv = json_object_get(mem, key);
        if (!json_is_integer(pv))
            return 2;
        long long want = (long long)json_integer_value(pv);
        printf("%s: predicted %lld, measured", kinds[k], want);
        for (size_t i = 0; i < n; i++) {
            long long got = kind_of(r, (int)i, kinds[k]);
            printf(" %lld", got);
            if (got != want)
                bad = bad ? bad : 1;
        }
        printf("; ");
    }
    printf("\n");
    return bad;
}

static int cmp_relerr(const char *path)
{
    json_t *r = load(path);
    if (!r)
        return 2;
    json_t *meas = json_object_get(r, "measured"), *pred = json_object_get(r, "predicted");
    json_t *rel = json_object_get(r, "relative_error");
    if (!json_is_object(meas) || !json_is_object(pred) || !json_is_object(rel)) {
        fprintf(stderr, "px_cmp: %s: no measured / predicted / relative_error\n", path);
        return 2;
    }
    const char *keys[] = {"step_time_s", "tokens_per_s", "mfu", "hfu", "peak_memory_bytes"};
    int bad = 0, numbers = 0;
    for (int i = 0; i < 5; i++) {
        json_t *e = json_object_get(rel, keys[i]);
        double m = json_number_value(json_object_get(meas, keys[i]));
        double p = json_number_value(json_object_get(pred, keys[i]));
        if (m == 0.0 || p == 0.0) {
            if (!json_is_null(e)) {
                fprintf(stderr, "px_cmp: %s: predicted %g, measured %g: want null\n", keys[i], p,
                        m);
                bad = 1;
            }
            continue;
        }
        double want = (p - m) / m, got = json_number_value(e);
        if (!json_is_number(e) || !(fabs(got - want) <= 1e-9 * (1.0 + fabs(want)))) {
            fprintf(stderr, "px_cmp: %s: relative_error %g, (predicted - measured) / measured = %g\n",
                    keys[i], got, want);
            bad = 1;
        }
        numbers++;
        printf("%s: predicted %g, measured %g, relative_error %+.4f\n", keys[i], p, m, got);
    }
    json_decref(r);
    if (numbers == 0) {
        fprintf(stderr, "px_cmp: %s: no relative error to check\n", path);
        return 2;
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "relerr"))
        return cmp_relerr(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "losses"))
        return cmp_losses(argv[2], argv[3], atof(argv[4]));
    if (argc == 6 && !strcmp(argv[1], "weights"))
        return cmp_weights(argv[2], argv[3], atof(argv[4]), atof(argv[5]), LLONG_MIN, LLONG_MAX);
    if (argc == 8 && !strcmp(argv[1], "weights"))
        return cmp_weights(argv[2], argv[3], atof(argv[4]), atof(argv[5]), atoll(argv[6]),
                           atoll(argv[7]));
    if (argc == 5 && !strcmp(argv[1], "peak")) {
        json_t *r = load(argv[2]);
        if (!r)
            return 2;
        long long a = peak_of(r, atoi(argv[3])), b = peak_of(r, atoi(argv[4]));
        printf("peak memory: rank %s %lld bytes, rank %s %lld bytes\n", argv[3], a, argv[4], b);
        return (a < 0 || b < 0) ? 2 : (a > b ? 0 : 1);
    }
    if (argc == 6 && !strcmp(argv[1], "peak2")) {
        json_t *r1 = load(argv[2]), *r2 = load(argv[4]);
        if (!r1 || !r2)
            return 2;
        long long a = peak_of(r1, atoi(argv[3])), b = peak_of(r2, atoi(argv[5]));
        printf("peak memory: %s rank %s %lld bytes, %s rank %s %lld bytes\n", argv[2], argv[3], a,
               argv[4], argv[5], b);
        return (a < 0 || b < 0) ? 2 : (a > b ? 0 : 1);
    }
    if (argc == 7 && !strcmp(argv[1], "peakclose")) {
        json_t *r1 = load(argv[2]), *r2 = load(argv[4]);
        if (!r1 || !r2)
            return 2;
        long long a = peak_of(r1, atoi(argv[3])), b = peak_of(r2, atoi(argv[5]));
        double rel = b > 0 ? fabs((double)(a - b)) / (double)b : INFINITY;
        printf("peak memory: %s rank %s %lld bytes, %s rank %s %lld bytes (%.1f %%, limit "
               "%.1f %%)\n",
               argv[2], argv[3], a, argv[4], argv[5], b, 100 * rel, 100 * atof(argv[6]));
        return (a < 0 || b < 0) ? 2 : (rel <= atof(argv[6]) ? 0 : 1);
    }
    if (argc == 4 && !strcmp(argv[1], "predpeak")) {
        json_t *r = load(argv[2]);
        if (!r)
            return 2;
        json_t *ranks = json_object_get(r, "per_rank_peak_memory_bytes");
        json_t *pred = json_object_get(json_object_get(r, "predicted"), "peak_memory_bytes");
        if (!json_is_array(ranks) || json_array_size(ranks) == 0 || !json_is_number(pred)) {
            fprintf(stderr, "px_cmp: %s: no per-rank peaks or no predicted peak\n", argv[2]);
            return 2;
        }
        double worst = 0.0;
        printf("peak memory per rank:");
        for (size_t i = 0; i < json_array_size(ranks); i++) {
            double v = json_number_value(json_array_get(ranks, i));
            printf(" %.0f", v);
            worst = v > worst ? v : worst;
        }
        double p = json_number_value(pred), rel = worst > 0 ? (p - worst) / worst : INFINITY;
        printf("; predicted %.0f (worst stage), error %+.1f %% (limit %.1f %%)\n", p, 100 * rel,
               100 * atof(argv[3]));
        return fabs(rel) <= atof(argv[3]) ? 0 : 1;
    }
    if (argc == 5 && !strcmp(argv[1], "tokens")) {
        long long n = atoll(argv[3]), vocab = atoll(argv[4]);
        FILE *f = fopen(argv[2], "wb");
        if (!f || n < 1 || vocab < 1)
            return 2;
        uint64_t x = 42;
        for (long long i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t id = (uint32_t)((x >> 33) % (uint64_t)vocab);
            unsigned char b4[4] = {(unsigned char)id, (unsigned char)(id >> 8),
                                   (unsigned char)(id >> 16), (unsigned char)(id >> 24)};
            fwrite(b4, 1, 4, f);
        }
        return fclose(f) == 0 ? 0 : 2;
    }
    if (argc == 4 && !strcmp(argv[1], "differ_any")) {
        json_t *l1 = json_object_get(load(argv[2]), "losses");
        json_t *l2 = json_object_get(load(argv[3]), "losses");
        size_t n = json_array_size(l1);
        if (n == 0 || n != json_array_size(l2))
            return 2;
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            double a = json_number_value(json_array_get(l1, i));
            double b = json_number_value(json_array_get(l2, i));
            worst = fmax(worst, fabs(a - b));
        }
        printf("losses differ by up to %.3g\n", worst);
        return worst > 0.0 ? 0 : 1;
    }
    if (argc == 4 && !strcmp(argv[1], "kinds"))
        return cmp_kinds(argv[2], argv[3]);
    if (argc == 8 && !strcmp(argv[1], "kindratio")) {
        json_t *r1 = load(argv[2]), *r2 = load(argv[3]);
        if (!r1 || !r2)
            return 2;
        long long a = kind_of(r1, atoi(argv[4]), argv[5]);
        long long b = kind_of(r2, atoi(argv[4]), argv[5]);
        long long num = atoll(argv[6]), den = atoll(argv[7]);
        printf("%s at peak, rank %s: %lld -> %lld bytes (ratio %.6f, expected %lld/%lld)\n",
               argv[5], argv[4], a, b, a > 0 ? (double)b / (double)a : NAN, num, den);
        return (a <= 0 || b < 0 || den <= 0) ? 2 : (b * den == a * num ? 0 : 1);
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "differ")) {
        double rtol = argc == 5 ? atof(argv[4]) : 1e-4;
        json_t *r1 = load(argv[2]), *r2 = load(argv[3]);
        if (!r1 || !r2)
            return 2;
        double a = json_number_value(json_array_get(json_object_get(r1, "losses"), 0));
        double b = json_number_value(json_array_get(json_object_get(r2, "losses"), 0));
        printf("first losses: %.9g vs %.9g\n", a, b);
        return fabs(a - b) > rtol * fabs(a) ? 0 : 1;
    }
    fprintf(stderr, "usage: px_cmp losses REF TEST RTOL |\n"
                    "       weights REF_DIR TEST_DIR ATOL RTOL [MIN_ID MAX_ID] |\n"
                    "       peak REPORT RANK_A RANK_B | peak2 A RANK B RANK |\n"
                    "       tokens FILE N VOCAB | differ A B [RTOL] | relerr REPORT\n");
    return 2;
}
