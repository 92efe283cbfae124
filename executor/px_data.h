/* px_data.h — the token stream of a training step: deterministic synthetic
 * tokens, or a flat file of token ids (format in docs/executor.md).  Sequence
 * g of the run is a pure function of g, so every split of the global batch
 * sees the same sequences. */
#ifndef PX_DATA_H
#define PX_DATA_H

#include <stdint.h>

#include "px_error.h"

typedef struct {
    int64_t vocab, seq_len;
    uint64_t seed;
    uint32_t *tokens;  /* file contents, NULL for synthetic data */
    int64_t n_tokens;
    int64_t n_windows; /* file: sequences before wrapping around */
} px_data;

/* path NULL: synthetic tokens from seed.  Otherwise reads the whole file:
 * little-endian uint32 ids, no header; every id must be < vocab and the file
 * must hold at least seq_len + 1 ids. */
px_status px_data_open(px_data *d, const char *path, int64_t vocab, int64_t seq_len,
                       uint64_t seed, px_error *err);

/* tokens[seq_len + 1] of global sequence g (inputs are [0, s), targets [1, s]). */
void px_data_sequence(const px_data *d, int64_t g, int32_t *tokens);

void px_data_close(px_data *d);

#endif
