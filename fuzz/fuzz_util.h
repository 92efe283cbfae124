/* fuzz_util.h — shared by the libFuzzer targets: the fuzzed bytes as a file
 * (the parsers under test take paths, as the tools do), and the check every
 * target makes: a refusal fills the error record with a message. */
#ifndef PX_FUZZ_UTIL_H
#define PX_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_error.h"

/* Writes data to a per-process file under /tmp and returns its path. */
static inline const char *px_fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[128];
    snprintf(path, sizeof path, "/tmp/px-fuzz-%d%s", (int)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    if (fclose(f) != 0)
        abort();
    return path;
}

/* A refusal must say why: a status and a non-empty message. */
static inline void px_fuzz_check_error(px_status st, const px_error *err)
{
    if (st != PX_OK && (err->code != st || err->msg[0] == '\0'))
        abort();
}

#endif
