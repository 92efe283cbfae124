/* px_data.c — synthetic and file-backed token sequences. */
#include "px_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

px_status px_data_open(px_data *d, const char *path, int64_t vocab, int64_t seq_len,
                       uint64_t seed, px_error *err)
{
    memset(d, 0, sizeof *d);
    d->vocab = vocab;
    d->seq_len = seq_len;
    d->seed = seed;
    if (!path)
        return PX_OK;
    FILE *f = fopen(path, "rb");
    if (!f)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot open token file: %s",
                            strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot seek in token file");
    }
    long size = ftell(f);
    rewind(f);
    if (size < 0 || size % 4 != 0) {
        fclose(f);
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "token file: size %ld bytes is not a multiple of 4 (expected "
                            "little-endian uint32 token ids, no header)",
                            size);
    }
    int64_t n = size / 4;
    if (n < seq_len + 1) {
        fclose(f);
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "token file: %lld ids, need at least seq_len + 1 = %lld",
                            (long long)n, (long long)(seq_len + 1));
    }
    unsigned char *raw = malloc((size_t)size);
    d->tokens = malloc((size_t)n * sizeof *d->tokens);
    if (!raw || !d->tokens) {
        free(raw);
        fclose(f);
        px_data_close(d);
        return PX_FAIL(err, PX_ERR_NOMEM, "token file: cannot hold %lld ids in memory",
                       (long long)n);
    }
    size_t got = fread(raw, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        free(raw);
        px_data_close(d);
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "token file: short read");
    }
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *p = raw + 4 * i; /* explicit little-endian decode */
        uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24;
        if ((int64_t)v >= vocab) {
            free(raw);
            px_data_close(d);
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "token file: id %u at index %lld is >= vocab = %lld", v,
                                (long long)i, (long long)vocab);
        }
        d->tokens[i] = v;
    }
    free(raw);
    d->n_tokens = n;
    /* Windows of seq_len + 1 ids overlapping by one (the last target of one
     * sequence is the first input of the next). */
    d->n_windows = (n - 1) / seq_len;
    return PX_OK;
}

void px_data_sequence(const px_data *d, int64_t g, int32_t *tokens)
{
    if (d->tokens) {
        int64_t start = (g % d->n_windows) * d->seq_len;
        for (int64_t i = 0; i <= d->seq_len; i++)
            tokens[i] = (int32_t)d->tokens[start + i];
        return;
    }
    /* Learnable synthetic text: mostly a fixed affine successor of the
     * previous token, one time in four a random one, so the loss falls
     * visibly within a few steps while staying a pure function of (seed, g). */
    uint64_t base = mix64(mix64(d->seed ^ 0xDA7Aull) ^ (uint64_t)g);
    for (int64_t i = 0; i <= d->seq_len; i++) {
        uint64_t h = mix64(base ^ (uint64_t)i);
        if (i == 0 || (h & 3) == 0)
            tokens[i] = (int32_t)((h >> 8) % (uint64_t)d->vocab);
        else
            tokens[i] = (int32_t)(((uint64_t)tokens[i - 1] * 5 + 1) % (uint64_t)d->vocab);
    }
}

void px_data_close(px_data *d)
{
    free(d->tokens);
    d->tokens = NULL;
    d->n_tokens = 0;
}
