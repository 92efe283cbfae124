/* test_units.c — the reliability building blocks on known cases: checked
 * arithmetic (px_checked.h) at the edges of int64, the atomic writer
 * (px_io.h) on a new file, over an old one, to /dev/full and under a
 * file-size limit (the old file survives), and the schema bounds of the
 * field tables applied to a model built in memory (px_model_validate). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "px_checked.h"
#include "px_io.h"
#include "px_cost.h"
#include "px_model.h"
#include "px_test.h"

static void test_checked(void)
{
    int64_t r = 0;
    CHECK(px_mul_ok(INT64_C(1) << 31, INT64_C(1) << 31, &r) && r == INT64_C(1) << 62);
    CHECK(!px_mul_ok(INT64_C(1) << 32, INT64_C(1) << 31, &r) && r == INT64_MAX);
    CHECK(!px_add_ok(INT64_MAX, 1, &r) && r == INT64_MAX);
    CHECK(px_add_ok(INT64_MAX - 1, 1, &r) && r == INT64_MAX);
    CHECK(px_mul_sat(INT64_C(1) << 40, INT64_C(1) << 40) == INT64_MAX);
    CHECK(px_add_sat(INT64_MAX, INT64_MAX) == INT64_MAX);
    CHECK(px_i64_from_double_sat(1e30) == INT64_MAX);
    CHECK(px_i64_from_double_sat(9223372036854775808.0) == INT64_MAX);
    CHECK(px_i64_from_double_sat(0.0 / 0.0) == INT64_MAX);
    CHECK(px_i64_from_double_sat(-1e30) == -INT64_MAX);
    CHECK(px_i64_from_double_sat(1234.6) == 1235);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_atomic(void)
{
    char dir[] = "/tmp/px-io-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/out.json", dir);
    px_error err;
    CHECK(px_io_write_atomic(path, "first\n", 6, &err) == PX_OK);
    char *got = slurp(path);
    CHECK(got && strcmp(got, "first\n") == 0);
    CHECK(px_io_write_atomic(path, "second\n", 7, &err) == PX_OK);
    got = slurp(path);
    CHECK(got && strcmp(got, "second\n") == 0);
    /* a device is never written over: refused by name, left a device */
    CHECK(px_io_write_atomic("/dev/full", "x", 1, &err) == PX_ERR_IO);
    CHECK_MSG(strstr(err.msg, "not a regular file") && !strcmp(err.file, "/dev/full"), "%s",
              err.msg);
    struct stat sb;
    CHECK(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode));
    /* a symbolic link (even to a regular file) is not replaced */
    char link[160];
    snprintf(link, sizeof link, "%s/link.json", dir);
    CHECK(symlink(path, link) == 0);
    CHECK(px_io_write_atomic(link, "x", 1, &err) == PX_ERR_IO);
    CHECK_MSG(strstr(err.msg, "symbolic link") != NULL, "%s", err.msg);
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(unlink(link) == 0);
    /* no empty path, no missing directory, no trailing slash */
    CHECK(px_io_write_atomic("", "x", 1, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "empty") != NULL, "%s", err.msg);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/no/such.json", dir);
    CHECK(px_io_write_atomic(missing, "x", 1, &err) == PX_ERR_IO);
    CHECK_MSG(strstr(err.msg, "does not exist") != NULL, "%s", err.msg);
    CHECK(px_io_check_option("--write-top", "", true, &err) == PX_ERR_INVALID);
    CHECK_MSG(!strcmp(err.file, "--write-top ''"), "%s", err.file);
    /* a write that fails half-way (EFBIG under a 512-byte file-size limit)
     * leaves the previous file whole and no temporary file */
    static char big[4096];
    memset(big, 'x', sizeof big);
    struct rlimit old, lim = {512, 512};
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN);
    lim.rlim_max = old.rlim_max;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    px_status st = px_io_write_atomic(path, big, sizeof big, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK_MSG(st == PX_ERR_IO && strstr(err.msg, "unchanged"), "%s", err.msg);
    got = slurp(path);
    CHECK(got && strcmp(got, "second\n") == 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls %s | grep -v '^out.json$')\"", dir);
    CHECK(system(cmd) == 0);
    /* a directory as the target */
    CHECK(px_io_write_atomic(dir, "x", 1, &err) == PX_ERR_IO);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

static void test_model_bounds(void)
{
    px_model m;
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK);
    px_model bad = m;
    bad.hidden = INT64_C(1) << 62; /* the parameter count would wrap */
    CHECK(px_model_validate(&bad, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "hidden: 4611686018427387904 is out of range (allowed: integer "
                              "1..1048576)") != NULL, "%s", err.msg);
    bad = m;
    bad.n_experts = INT32_MAX;
    bad.top_k = 1;
    bad.moe_ffn = 1024;
    CHECK(px_model_validate(&bad, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "n_experts: 2147483647 is out of range") != NULL, "%s", err.msg);
    /* every field in range, the sum over layers and experts is not */
    bad = m;
    bad.n_layers = 1024;
    bad.n_experts = 65536;
    bad.top_k = 1;
    bad.moe_ffn = 1 << 20;
    CHECK(px_model_validate(&bad, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "parameters; at most") != NULL, "%s", err.msg);
    CHECK(px_model_validate(&m, &err) == PX_OK);
}

/* The cost model's own check: a profile poisoned past its bounds (a rate
 * of 1e-300, set in memory where no reader refuses it) makes a time
 * infinite, and a debug build aborts where the step is assembled instead of
 * printing it.  Forked, so the abort is observed, not suffered. */
static void test_cost_asserts(void)
{
#ifdef NDEBUG
    printf("skip cost assertions: NDEBUG build\n");
#else
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("tiny-llama", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    px_parallel par;
    px_parallel_init(&par);
    par.seq_len = m.seq_len;
    px_prediction pred;
    CHECK(px_cost_evaluate(&m, &hw, &par, &pred, &err) == PX_OK && pred.time.step_s > 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        (void)!freopen("/dev/null", "w", stderr); /* the assertion's own message */
        hw.peak_flops = 1e-300;
        hw.hbm_bw = 1e-300;
        (void)px_cost_evaluate(&m, &hw, &par, &pred, &err);
        _exit(0); /* the assertion did not fire */
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "a poisoned profile's times were not caught (status %d)", status);
#endif
}

int main(void)
{
    test_checked();
    test_atomic();
    test_model_bounds();
    test_cost_asserts();
    return px_test_result("reliability_units");
}
