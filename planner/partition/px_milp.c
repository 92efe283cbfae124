/* px_milp.c — the GLPK wrapper (the only file that includes <glpk.h>).
 *
 * The program lives in plain arrays until px_milp_solve; GLPK objects exist
 * only for the duration of one guarded call.  That keeps GLPK's error
 * handling in one place: its error hook longjmps back to run_guarded(), which
 * then calls glp_free_env() (after an error GLPK's environment is undefined
 * and every object in it is lost) and turns the captured terminal text into a
 * px_error. */
#include "px_milp.h"

#include <float.h>
#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct px_milp {
    int n_cols, cap_cols;
    px_milp_kind *kind;
    double *lb, *ub, *obj;
    char **col_name;
    int *stamp; /* per column: last row that used it (duplicate check) */

    int n_rows, cap_rows;
    double *lo, *hi;
    char **row_name;
    int *row_start; /* n_rows + 1 entries into the triplets */

    int nnz, cap_nnz;
    int *nz_col;
    double *nz_val;

    bool has_solution;
    double *x; /* last solution, n_cols */
};

/* ---- growth helpers ------------------------------------------------------ */

static bool grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

static char *dup_name(const char *s)
{
    if (!s || !s[0])
        return NULL;
    size_t n = strlen(s);
    if (n > 255) /* GLPK's limit on symbolic names */
        n = 255;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

void px_milp_opts_init(px_milp_opts *o)
{
    o->time_limit_s = PX_MILP_DEFAULT_TIME_LIMIT_S;
    o->work_limit = 0.0;
    o->mip_gap = PX_MILP_DEFAULT_GAP;
    o->presolve = true;
    o->cuts = true;
}

px_status px_milp_new(px_milp **out, px_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return PX_FAIL(err, PX_ERR_NOMEM, "px_milp_new: out of memory");
    (*out)->row_start = malloc(sizeof(int));
    if (!(*out)->row_start) {
        free(*out);
        *out = NULL;
        return PX_FAIL(err, PX_ERR_NOMEM, "px_milp_new: out of memory");
    }
    (*out)->row_start[0] = 0;
    return PX_OK;
}

void px_milp_free(px_milp *mp)
{
    if (!mp)
        return;
    for (int j = 0; j < mp->n_cols; j++)
        free(mp->col_name[j]);
    for (int i = 0; i < mp->n_rows; i++)
        free(mp->row_name[i]);
    free(mp->kind);
    free(mp->lb);
    free(mp->ub);
    free(mp->obj);
    free(mp->col_name);
    free(mp->stamp);
    free(mp->lo);
    free(mp->hi);
    free(mp->row_name);
    free(mp->row_start);
    free(mp->nz_col);
    free(mp->nz_val);
    free(mp->x);
    free(mp);
}

int px_milp_n_cols(const px_milp *mp) { return mp->n_cols; }
int px_milp_n_rows(const px_milp *mp) { return mp->n_rows; }
int px_milp_n_nonzeros(const px_milp *mp) { return mp->nnz; }

/* ---- building ------------------------------------------------------------ */

static px_status check_col_bounds(px_milp_kind kind, double lb, double ub, const char *what,
                                  px_error *err)
{
    if (isnan(lb) || isnan(ub) || lb == INFINITY || ub == -INFINITY)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "%s: bounds [%g, %g]: lb must be finite or -INFINITY, ub finite or "
                       "INFINITY",
                       what, lb, ub);
    if (lb > ub)
        return PX_FAIL(err, PX_ERR_INVALID, "%s: lower bound %g > upper bound %g", what, lb,
                       ub);
    if (kind == PX_MILP_BINARY && (lb < 0.0 || ub > 1.0))
        return PX_FAIL(err, PX_ERR_INVALID, "%s: binary column bounds [%g, %g]: allowed within [0, 1]",
                       what, lb, ub);
    if (kind != PX_MILP_CONTINUOUS &&
        ((isfinite(lb) && lb != floor(lb)) || (isfinite(ub) && ub != floor(ub))))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "%s: integer column bounds [%g, %g]: must be whole numbers", what, lb,
                       ub);
    return PX_OK;
}

px_status px_milp_add_col(px_milp *mp, const char *name, px_milp_kind kind, double lb,
                          double ub, double obj, int *col, px_error *err)
{
    if (kind != PX_MILP_CONTINUOUS && kind != PX_MILP_INTEGER && kind != PX_MILP_BINARY)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "column %s: kind %d; allowed: continuous, integer, binary",
                       name ? name : "?", (int)kind);
    if (kind == PX_MILP_BINARY && isinf(lb) && lb < 0)
        lb = 0.0;
    if (kind == PX_MILP_BINARY && isinf(ub))
        ub = 1.0;
    char what[300];
    snprintf(what, sizeof what, "column %d (%s)", mp->n_cols, name ? name : "unnamed");
    px_status st = check_col_bounds(kind, lb, ub, what, err);
    if (st)
        return st;
    if (!isfinite(obj))
        return PX_FAIL(err, PX_ERR_INVALID, "%s: objective coefficient %g must be finite",
                       what, obj);
    int need = mp->n_cols + 1, cap = mp->cap_cols, ok = 1;
    ok &= grow((void **)&mp->kind, &cap, need, sizeof *mp->kind);
    cap = mp->cap_cols;
    ok &= grow((void **)&mp->lb, &cap, need, sizeof *mp->lb);
    cap = mp->cap_cols;
    ok &= grow((void **)&mp->ub, &cap, need, sizeof *mp->ub);
    cap = mp->cap_cols;
    ok &= grow((void **)&mp->obj, &cap, need, sizeof *mp->obj);
    cap = mp->cap_cols;
    ok &= grow((void **)&mp->col_name, &cap, need, sizeof *mp->col_name);
    cap = mp->cap_cols;
    ok &= grow((void **)&mp->stamp, &cap, need, sizeof *mp->stamp);
    if (!ok)
        return PX_FAIL(err, PX_ERR_NOMEM, "px_milp_add_col: out of memory");
    mp->cap_cols = cap;
    int j = mp->n_cols++;
    mp->kind[j] = kind;
    mp->lb[j] = lb;
    mp->ub[j] = ub;
    mp->obj[j] = obj;
    mp->col_name[j] = dup_name(name);
    mp->stamp[j] = -1;
    mp->has_solution = false;
    if (col)
        *col = j;
    return PX_OK;
}

px_status px_milp_add_row(px_milp *mp, const char *name, double lo, double hi, int n,
                          const int *cols, const double *vals, int *row, px_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "row %d (%s)", mp->n_rows, name ? name : "unnamed");
    if (isnan(lo) || isnan(hi) || lo == INFINITY || hi == -INFINITY || lo > hi)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "%s: bounds [%g, %g]: need lo <= hi, lo finite or -INFINITY, hi "
                       "finite or INFINITY",
                       what, lo, hi);
    if (n < 0 || (n > 0 && (!cols || !vals)))
        return PX_FAIL(err, PX_ERR_INVALID, "%s: %d entries with no arrays", what, n);
    for (int k = 0; k < n; k++) {
        if (cols[k] < 0 || cols[k] >= mp->n_cols)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "%s: entry %d names column %d; allowed 0..%d (add columns first)",
                           what, k, cols[k], mp->n_cols - 1);
        if (!isfinite(vals[k]))
            return PX_FAIL(err, PX_ERR_INVALID, "%s: coefficient of column %d is %g; must be finite",
                           what, cols[k], vals[k]);
        if (mp->stamp[cols[k]] == mp->n_rows)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "%s: column %d appears twice; each column at most once per row",
                           what, cols[k]);
        mp->stamp[cols[k]] = mp->n_rows;
    }
    /* every row array is sized for need + 1 so that they share one capacity
     * (row_start has one more entry than there are rows) */
    int need = mp->n_rows + 2, cap = mp->cap_rows, ok = 1;
    ok &= grow((void **)&mp->lo, &cap, need, sizeof *mp->lo);
    cap = mp->cap_rows;
    ok &= grow((void **)&mp->hi, &cap, need, sizeof *mp->hi);
    cap = mp->cap_rows;
    ok &= grow((void **)&mp->row_name, &cap, need, sizeof *mp->row_name);
    cap = mp->cap_rows;
    ok &= grow((void **)&mp->row_start, &cap, need, sizeof *mp->row_start);
    int ncap = mp->cap_nnz;
    ok &= grow((void **)&mp->nz_col, &ncap, mp->nnz + n, sizeof *mp->nz_col);
    ncap = mp->cap_nnz;
    ok &= grow((void **)&mp->nz_val, &ncap, mp->nnz + n, sizeof *mp->nz_val);
    if (!ok)
        return PX_FAIL(err, PX_ERR_NOMEM, "px_milp_add_row: out of memory");
    mp->cap_rows = cap;
    mp->cap_nnz = ncap;
    int i = mp->n_rows++;
    mp->lo[i] = lo;
    mp->hi[i] = hi;
    mp->row_name[i] = dup_name(name);
    for (int k = 0; k < n; k++) {
        mp->nz_col[mp->nnz] = cols[k];
        mp->nz_val[mp->nnz] = vals[k];
        mp->nnz++;
    }
    mp->row_start[i + 1] = mp->nnz;
    mp->has_solution = false;
    if (row)
        *row = i;
    return PX_OK;
}

px_status px_milp_set_obj(px_milp *mp, int col, double obj, px_error *err)
{
    if (col < 0 || col >= mp->n_cols)
        return PX_FAIL(err, PX_ERR_INVALID, "px_milp_set_obj: column %d; allowed 0..%d", col,
                       mp->n_cols - 1);
    if (!isfinite(obj))
        return PX_FAIL(err, PX_ERR_INVALID, "column %d: objective coefficient %g must be finite",
                       col, obj);
    mp->obj[col] = obj;
    return PX_OK;
}

px_status px_milp_set_col_bounds(px_milp *mp, int col, double lb, double ub, px_error *err)
{
    if (col < 0 || col >= mp->n_cols)
        return PX_FAIL(err, PX_ERR_INVALID, "px_milp_set_col_bounds: column %d; allowed 0..%d",
                       col, mp->n_cols - 1);
    char what[300];
    snprintf(what, sizeof what, "column %d (%s)", col,
             mp->col_name[col] ? mp->col_name[col] : "unnamed");
    px_status st = check_col_bounds(mp->kind[col], lb, ub, what, err);
    if (st)
        return st;
    mp->lb[col] = lb;
    mp->ub[col] = ub;
    return PX_OK;
}

px_status px_milp_set_row_bounds(px_milp *mp, int row, double lo, double hi, px_error *err)
{
    if (row < 0 || row >= mp->n_rows)
        return PX_FAIL(err, PX_ERR_INVALID, "px_milp_set_row_bounds: row %d; allowed 0..%d", row,
                       mp->n_rows - 1);
    if (isnan(lo) || isnan(hi) || lo == INFINITY || hi == -INFINITY || lo > hi)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "row %d: bounds [%g, %g]: need lo <= hi, lo finite or -INFINITY, hi finite "
                       "or INFINITY",
                       row, lo, hi);
    mp->lo[row] = lo;
    mp->hi[row] = hi;
    return PX_OK;
}

const char *px_milp_limit_name(const px_milp_result *res)
{
    return res->work_limit_hit ? "work limit" : "time limit";
}

double px_milp_value(const px_milp *mp, int col)
{
    if (!mp->has_solution || col < 0 || col >= mp->n_cols)
        return NAN;
    return mp->x[col];
}

/* ---- the guard ----------------------------------------------------------- */

typedef struct {
    jmp_buf jump;
    char text[768]; /* GLPK's last terminal output, newlines folded */
    int text_len;
    double gap;     /* from the callback */
    double deadline;/* now_s() past which the callback stops GLPK */
    bool stopped_by_time;
    double work_limit; /* past which the callback stops GLPK; 0: none */
    double work;    /* simplex iterations x nonzeros so far */
    int last_it;    /* the iteration count the work was last brought up to */
    bool stopped_by_work;
} guard;

static void guard_error_hook(void *info)
{
    guard *g = info;
    longjmp(g->jump, 1);
}

/* Captures GLPK's output (with messages off, only its error reports reach
 * here) and keeps it from stdout: library code never prints. */
static int guard_term_hook(void *info, const char *s)
{
    guard *g = info;
    for (; *s; s++) {
        char c = (*s == '\n') ? ' ' : *s;
        if (g->text_len >= (int)sizeof g->text - 1) {
            /* keep the tail: the error line comes last */
            memmove(g->text, g->text + 256, (size_t)(g->text_len - 256));
            g->text_len -= 256;
        }
        g->text[g->text_len++] = c;
    }
    g->text[g->text_len] = '\0';
    return 1;
}

/* Runs fn(arg) with GLPK's error and terminal hooks pointing at g.  Returns
 * false when GLPK raised an error (its environment has then been freed). */
static bool run_guarded(void (*fn)(void *), void *arg, guard *g)
{
    if (setjmp(g->jump)) {
        glp_free_env(); /* GLPK's state is undefined after an error */
        return false;
    }
    glp_term_hook(guard_term_hook, g);
    glp_error_hook(guard_error_hook, g);
    fn(arg);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    return true;
}

/* ---- solving ------------------------------------------------------------- */

typedef struct {
    px_milp *mp;
    const px_milp_opts *opts;
    guard *g;
    const char *lp_path; /* write_lp instead of solving when set */
    int *ia, *ja;
    double *ar;
    int ret, lp_ret, status, write_ret;
    double obj;
} solve_job;

static void set_bounds_col(glp_prob *lp, int j, double lb, double ub)
{
    int type = (isinf(lb) && isinf(ub)) ? GLP_FR
               : isinf(ub)              ? GLP_LO
               : isinf(lb)              ? GLP_UP
               : (lb == ub)             ? GLP_FX
                                        : GLP_DB;
    glp_set_col_bnds(lp, j, type, isinf(lb) ? 0.0 : lb, isinf(ub) ? 0.0 : ub);
}

static void set_bounds_row(glp_prob *lp, int i, double lo, double hi)
{
    int type = (isinf(lo) && isinf(hi)) ? GLP_FR
               : isinf(hi)              ? GLP_LO
               : isinf(lo)              ? GLP_UP
               : (lo == hi)             ? GLP_FX
                                        : GLP_DB;
    glp_set_row_bnds(lp, i, type, isinf(lo) ? 0.0 : lo, isinf(hi) ? 0.0 : hi);
}

static glp_prob *build_glpk(const px_milp *mp, int *ia, int *ja, double *ar)
{
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    if (mp->n_cols > 0)
        glp_add_cols(lp, mp->n_cols);
    for (int j = 0; j < mp->n_cols; j++) {
        if (mp->col_name[j])
            glp_set_col_name(lp, j + 1, mp->col_name[j]);
        glp_set_col_kind(lp, j + 1, mp->kind[j] == PX_MILP_CONTINUOUS ? GLP_CV : GLP_IV);
        set_bounds_col(lp, j + 1, mp->lb[j], mp->ub[j]);
        glp_set_obj_coef(lp, j + 1, mp->obj[j]);
    }
    if (mp->n_rows > 0)
        glp_add_rows(lp, mp->n_rows);
    for (int i = 0; i < mp->n_rows; i++) {
        if (mp->row_name[i])
            glp_set_row_name(lp, i + 1, mp->row_name[i]);
        set_bounds_row(lp, i + 1, mp->lo[i], mp->hi[i]);
        for (int k = mp->row_start[i]; k < mp->row_start[i + 1]; k++) {
            ia[k + 1] = i + 1;
            ja[k + 1] = mp->nz_col[k] + 1;
            ar[k + 1] = mp->nz_val[k];
        }
    }
    glp_load_matrix(lp, mp->nnz, ia, ja, ar);
    return lp;
}

static double now_s(void);

/* The work since the last call: the iterations since then, each over the
 * matrix as it is now (cuts add rows).  The count is GLPK's own, the same on
 * every machine. */
static void count_work(guard *g, glp_prob *lp)
{
    int it = glp_get_it_cnt(lp);
    if (it > g->last_it)
        g->work += (double)(it - g->last_it) * (double)glp_get_num_nz(lp);
    g->last_it = it;
}

/* Called by GLPK at every stage of branch-and-bound: records the gap,
 * enforces the work limit, and the time limit more often than GLPK's own
 * tm_lim check (which waits for the current node, cut round included, to
 * finish). */
static void track_gap(glp_tree *tree, void *info)
{
    guard *g = info;
    count_work(g, glp_ios_get_prob(tree));
    if (g->work_limit > 0.0 && g->work > g->work_limit) {
        g->stopped_by_work = true;
        glp_ios_terminate(tree);
    } else if (now_s() > g->deadline) {
        g->stopped_by_time = true;
        glp_ios_terminate(tree);
    }
    int reason = glp_ios_reason(tree);
    if (reason == GLP_IBINGO || reason == GLP_ISELECT) {
        double gap = glp_ios_mip_gap(tree);
        if (gap < DBL_MAX)
            g->gap = gap;
    }
}

static void solve_body(void *arg)
{
    solve_job *job = arg;
    px_milp *mp = job->mp;
    glp_prob *lp = build_glpk(mp, job->ia, job->ja, job->ar);
    if (job->lp_path) {
        job->write_ret = glp_write_lp(lp, NULL, job->lp_path);
        glp_delete_prob(lp);
        return;
    }
    const px_milp_opts *o = job->opts;
    double limit_ms = o->time_limit_s * 1000.0;
    int tm_lim = limit_ms >= (double)INT32_MAX ? INT32_MAX : (int)ceil(limit_ms);

    job->lp_ret = 0;
    if (!o->presolve) {
        /* glp_intopt needs an optimal LP basis when its presolver is off. */
        glp_smcp sp;
        glp_init_smcp(&sp);
        sp.msg_lev = GLP_MSG_OFF;
        sp.presolve = GLP_OFF; /* the LP presolver would not leave a basis behind */
        sp.tm_lim = tm_lim;
        job->lp_ret = glp_simplex(lp, &sp);
        count_work(job->g, lp);
        if (job->lp_ret == 0 && glp_get_status(lp) != GLP_OPT)
            job->lp_ret = glp_get_status(lp) == GLP_NOFEAS  ? GLP_ENOPFS
                          : glp_get_status(lp) == GLP_UNBND ? GLP_ENODFS
                                                            : GLP_EFAIL;
    }
    if (job->lp_ret != 0) {
        job->ret = job->lp_ret;
        job->status = GLP_UNDEF;
        glp_delete_prob(lp);
        return;
    }

    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = tm_lim;
    parm.mip_gap = o->mip_gap;
    /* GLPK rounds integer columns that are within tol_int of a whole number;
     * its default 1e-5 can move a row with large coefficients (memory in
     * units of the limit) past its bound once rounded. */
    parm.tol_int = 1e-9;
    parm.presolve = o->presolve ? GLP_ON : GLP_OFF;
    if (o->cuts) {
        parm.gmi_cuts = GLP_ON;
        parm.mir_cuts = GLP_ON;
        /* not cover cuts: GLPK 5.0's cover-cut generator raises
         * "glp_add_cols: ncs = 0" on some small programs */
        parm.clq_cuts = GLP_ON;
    }
    parm.cb_func = track_gap;
    parm.cb_info = job->g;
    job->g->deadline = now_s() + o->time_limit_s;
    job->g->work_limit = o->work_limit;
    job->ret = glp_intopt(lp, &parm);
    if (job->ret == GLP_ESTOP && (job->g->stopped_by_time || job->g->stopped_by_work))
        job->ret = GLP_ETMLIM; /* our own check: a limit, as GLPK's own */
    job->status = glp_mip_status(lp);
    if (job->status == GLP_OPT || job->status == GLP_FEAS) {
        job->obj = glp_mip_obj_val(lp);
        for (int j = 0; j < mp->n_cols; j++)
            mp->x[j] = glp_mip_col_val(lp, j + 1);
    }
    glp_delete_prob(lp);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static px_status run_job(solve_job *job, guard *g, px_error *err)
{
    px_milp *mp = job->mp;
    int n = mp->nnz + 1;
    job->ia = malloc((size_t)n * sizeof *job->ia);
    job->ja = malloc((size_t)n * sizeof *job->ja);
    job->ar = malloc((size_t)n * sizeof *job->ar);
    if (!job->ia || !job->ja || !job->ar) {
        free(job->ia);
        free(job->ja);
        free(job->ar);
        return PX_FAIL(err, PX_ERR_NOMEM, "GLPK matrix of %d entries: out of memory", mp->nnz);
    }
    job->g = g;
    bool ok = run_guarded(solve_body, job, g);
    free(job->ia);
    free(job->ja);
    free(job->ar);
    if (!ok)
        return PX_FAIL(err, PX_ERR_SOLVER, "GLPK raised an error: %s",
                       g->text_len ? g->text : "(no message)");
    return PX_OK;
}

static const char *glpk_ret_name(int ret)
{
    switch (ret) {
    case 0: return "ok";
    case GLP_EBOUND: return "incorrect bounds";
    case GLP_EROOT: return "no optimal LP basis";
    case GLP_ENOPFS: return "LP relaxation infeasible";
    case GLP_ENODFS: return "LP relaxation unbounded";
    case GLP_EFAIL: return "solver failure";
    case GLP_EMIPGAP: return "gap reached";
    case GLP_ETMLIM: return "time limit";
    case GLP_ESTOP: return "stopped";
    default: return "unexpected return code";
    }
}

/* One GLPK run with the given options; *raised is set when GLPK raised an
 * error (as opposed to reporting a status). */
static px_status attempt(px_milp *mp, const px_milp_opts *opts, px_milp_result *res,
                         bool *raised, px_error *err)
{
    guard g;
    memset(&g, 0, sizeof g);
    g.gap = -1.0;
    solve_job job;
    memset(&job, 0, sizeof job);
    job.mp = mp;
    job.opts = opts;
    res->gap = -1.0;
    res->outcome = PX_MILP_FAILED;
    res->objective = NAN;
    res->limit_hit = false;
    res->work_limit_hit = false;
    mp->has_solution = false;
    *raised = false;
    px_status st = run_job(&job, &g, err);
    res->work += g.work;
    if (st) {
        *raised = st == PX_ERR_SOLVER;
        return st;
    }
    res->glpk_ret = job.ret;
    res->glpk_status = job.status;

    /* Both checks: the return code says why GLPK stopped, the status what it
     * holds.  A limit with an incumbent is a usable, unproven answer. */
    bool have = job.status == GLP_OPT || job.status == GLP_FEAS;
    res->limit_hit = job.ret == GLP_ETMLIM;
    res->work_limit_hit = res->limit_hit && g.stopped_by_work;
    if (job.ret == 0 || job.ret == GLP_EMIPGAP || job.ret == GLP_ETMLIM) {
        if (job.status == GLP_NOFEAS) {
            res->outcome = PX_MILP_INFEASIBLE;
            return PX_FAIL(err, PX_ERR_INFEASIBLE, "the program has no integer solution");
        }
        if (have) {
            mp->has_solution = true;
            res->objective = job.obj;
            if (job.ret == GLP_ETMLIM) {
                res->outcome = PX_MILP_FEASIBLE;
                res->gap = g.gap;
            } else {
                res->outcome = PX_MILP_OPTIMAL;
                res->gap = job.ret == GLP_EMIPGAP && g.gap >= 0.0 ? g.gap : 0.0;
            }
            return PX_OK;
        }
        if (job.ret == GLP_ETMLIM) {
            res->outcome = PX_MILP_NO_SOLUTION;
            return PX_FAIL(err, PX_ERR_SOLVER,
                           "GLPK %s of %.3g %s reached before any integer solution was found "
                           "(%d variables, %d constraints); raise the limit",
                           px_milp_limit_name(res),
                           res->work_limit_hit ? opts->work_limit : opts->time_limit_s,
                           res->work_limit_hit ? "simplex iterations x nonzeros" : "s",
                           mp->n_cols, mp->n_rows);
        }
        return PX_FAIL(err, PX_ERR_SOLVER,
                       "GLPK stopped (%s) with an undefined solution status %d",
                       glpk_ret_name(job.ret), job.status);
    }
    if (job.ret == GLP_ENOPFS) {
        res->outcome = PX_MILP_INFEASIBLE;
        return PX_FAIL(err, PX_ERR_INFEASIBLE,
                       "the program has no solution (its LP relaxation is infeasible)");
    }
    if (job.ret == GLP_ETMLIM) /* from the LP phase without presolve */
        return PX_FAIL(err, PX_ERR_SOLVER,
                       "GLPK time limit of %.3g s reached while solving the LP relaxation",
                       opts->time_limit_s);
    return PX_FAIL(err, PX_ERR_SOLVER, "GLPK failed: %s (code %d)%s%s", glpk_ret_name(job.ret),
                   job.ret, g.text_len ? ": " : "", g.text);
}

/* Largest violation of a row bound by the solution in mp->x, relative to
 * max(1, |bound|); *row gets the worst row. */
static double max_row_violation(const px_milp *mp, int *row)
{
    double worst = 0.0;
    *row = -1;
    for (int i = 0; i < mp->n_rows; i++) {
        double act = 0.0;
        for (int k = mp->row_start[i]; k < mp->row_start[i + 1]; k++)
            act += mp->nz_val[k] * mp->x[mp->nz_col[k]];
        double v = 0.0;
        if (isfinite(mp->lo[i]) && act < mp->lo[i])
            v = (mp->lo[i] - act) / fmax(1.0, fabs(mp->lo[i]));
        if (isfinite(mp->hi[i]) && act > mp->hi[i])
            v = (act - mp->hi[i]) / fmax(1.0, fabs(mp->hi[i]));
        if (v > worst) {
            worst = v;
            *row = i;
        }
    }
    return worst;
}

/* A solution is accepted when no row is off by more than this (GLPK's own
 * primal tolerance is 1e-7 on scaled rows). */
#define PX_MILP_ROW_TOL 1e-6

px_status px_milp_solve(px_milp *mp, const px_milp_opts *opts, px_milp_result *res,
                        px_error *err)
{
    px_milp_opts defaults;
    px_milp_opts_init(&defaults);
    if (!opts)
        opts = &defaults;
    memset(res, 0, sizeof *res);
    res->gap = -1.0;
    res->outcome = PX_MILP_FAILED;
    res->objective = NAN;
    mp->has_solution = false;
    if (!(opts->time_limit_s > 0.0) || !isfinite(opts->time_limit_s))
        return PX_FAIL(err, PX_ERR_INVALID, "MILP time limit %g s: must be > 0 and finite",
                       opts->time_limit_s);
    if (!(opts->work_limit >= 0.0) || !isfinite(opts->work_limit))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "MILP work limit %g: must be >= 0 (0: none) and finite",
                       opts->work_limit);
    if (!(opts->mip_gap >= 0.0 && opts->mip_gap < 1.0))
        return PX_FAIL(err, PX_ERR_INVALID, "MILP gap %g: allowed 0 <= gap < 1", opts->mip_gap);
    if (mp->n_cols == 0)
        return PX_FAIL(err, PX_ERR_INVALID, "MILP has no columns; add at least one variable");
    free(mp->x);
    mp->x = calloc((size_t)mp->n_cols, sizeof *mp->x);
    if (!mp->x)
        return PX_FAIL(err, PX_ERR_NOMEM, "MILP solution of %d columns: out of memory",
                       mp->n_cols);

    double t0 = now_s();
    bool raised;
    px_status st = attempt(mp, opts, res, &raised, err);
    int bad_row = -1;
    double viol = st == PX_OK ? max_row_violation(mp, &bad_row) : 0.0;
    /* GLPK's MIP presolver checks rows whose columns it has fixed with a
     * tolerance of 1e-3 (it can return a point that breaks a row by that
     * much), and its cut generators have raised errors on small programs.
     * Both are avoided by the plain branch-and-bound, so fall back on it. */
    if ((raised || viol > PX_MILP_ROW_TOL) && (opts->presolve || opts->cuts)) {
        px_milp_opts plain = *opts;
        plain.presolve = false;
        plain.cuts = false;
        plain.time_limit_s = fmax(opts->time_limit_s - (now_s() - t0), 0.001);
        st = attempt(mp, &plain, res, &raised, err);
        res->retried = true;
        viol = st == PX_OK ? max_row_violation(mp, &bad_row) : 0.0;
    }
    res->solve_s = now_s() - t0;
    res->max_row_violation = viol;
    if (st == PX_OK && viol > PX_MILP_ROW_TOL) {
        mp->has_solution = false;
        res->outcome = PX_MILP_FAILED;
        return PX_FAIL(err, PX_ERR_SOLVER,
                       "GLPK's solution breaks row %d (%s) by %.3g (relative); numerical trouble",
                       bad_row, mp->row_name[bad_row] ? mp->row_name[bad_row] : "unnamed", viol);
    }
    return st;
}

px_status px_milp_write_lp(const px_milp *mp, const char *path, px_error *err)
{
    guard g;
    memset(&g, 0, sizeof g);
    solve_job job;
    memset(&job, 0, sizeof job);
    job.mp = (px_milp *)mp; /* not modified when writing */
    job.lp_path = path;
    px_status st = run_job(&job, &g, err);
    if (st)
        return st;
    if (job.write_ret != 0)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot write the LP file");
    return PX_OK;
}

static void provoke_error(void *arg)
{
    (void)arg;
    glp_prob *lp = glp_create_prob();
    glp_add_cols(lp, 1);
    glp_set_obj_coef(lp, 7, 1.0); /* column 7 does not exist: GLPK raises */
    glp_delete_prob(lp);
}

px_status px_milp_check_error_guard(px_error *err)
{
    guard g;
    memset(&g, 0, sizeof g);
    if (run_guarded(provoke_error, NULL, &g))
        return PX_FAIL(err, PX_ERR_INTERNAL, "GLPK accepted an out-of-range column");
    return PX_FAIL(err, PX_ERR_SOLVER, "GLPK raised an error: %s",
                   g.text_len ? g.text : "(no message)");
}
