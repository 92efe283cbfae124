/* px_test.h — the tiny assertion kit every C test uses: checks print the
 * expression, file and line, count failures, and the test's main returns
 * px_test_result() (0 pass, 1 fail). */
#ifndef PX_TEST_H
#define PX_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

static int px_test_failures = 0;
static int px_test_checks = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        px_test_checks++;                                                        \
        if (!(cond)) {                                                           \
            px_test_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        px_test_checks++;                                                        \
        if (!(cond)) {                                                           \
            px_test_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

/* |got - want| <= atol + rtol * |want| */
#define CHECK_CLOSE(got, want, rtol, atol)                                       \
    do {                                                                         \
        double g_ = (double)(got), w_ = (double)(want);                          \
        px_test_checks++;                                                        \
        if (!(fabs(g_ - w_) <= (atol) + (rtol)*fabs(w_))) {                      \
            px_test_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK_CLOSE failed: %s = %.9g, want %s = %.9g\n", \
                    __FILE__, __LINE__, #got, g_, #want, w_);                    \
        }                                                                        \
    } while (0)

/* True when files a and b both open and hold the same bytes (a data file's
 * copy in the repository against its shared original). */
static inline bool px_test_same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb)
            same = false;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static inline int px_test_result(const char *name)
{
    fprintf(stderr, "%s: %d checks, %d failed\n", name, px_test_checks, px_test_failures);
    return px_test_failures ? 1 : 0;
}

#endif
