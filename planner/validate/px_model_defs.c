/* px_model_defs.c — see px_model_defs.h. */
#include "px_model_defs.h"

#include <ctype.h>
#include <string.h>

typedef struct {
    const char *framework; /* prefix of the published framework name */
    int64_t layers, hidden, heads, vocab;
    const char *source;
} model_def;

/* Paxml's GPU GPT experiments (google/paxml
 * paxml/contrib/gpu/scripts_gpu/configs.py, the configurations NVIDIA's
 * Paxml benchmarks launch): GPT126M sets VOCAB_SIZE = 50304 (GPT-2's 50257
 * BPE padded to a multiple of 64) and GPT5B inherits it through Pile126M;
 * GPT175B sets VOCAB_SIZE = 50257.  All three are GPT-3 blocks: GeLU,
 * biases, learned positions, one embedding shared with the softmax. */
static const model_def defs[] = {
    {"Paxml", 12, 768, 12, 50304, "paxml/contrib/gpu/scripts_gpu/configs.py GPT126M"},
    {"Paxml", 24, 4096, 32, 50304, "paxml/contrib/gpu/scripts_gpu/configs.py GPT5B"},
    {"Paxml", 96, 12288, 96, 50257, "paxml/contrib/gpu/scripts_gpu/configs.py GPT175B"},
};

static bool prefix_ci(const char *s, const char *p)
{
    for (; *p; s++, p++)
        if (!*s || tolower((unsigned char)*s) != tolower((unsigned char)*p))
            return false;
    return true;
}

bool px_model_def_vocab(const char *framework, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t *vocab, const char **source)
{
    if (!framework)
        return false;
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        const model_def *d = &defs[i];
        if (prefix_ci(framework, d->framework) && d->layers == layers && d->hidden == hidden &&
            d->heads == heads) {
            *vocab = d->vocab;
            if (source)
                *source = d->source;
            return true;
        }
    }
    return false;
}
