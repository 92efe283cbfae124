/* px_split_megatron.c — see px_split_megatron.h. */
#include "px_split_megatron.h"

bool px_split_megatron(int64_t L, int pp, int vpp, const px_megatron_split *how,
                       int *layers_per_chunk)
{
    if (pp < 1 || vpp < 1 || L < 1)
        return false;
    int64_t stage[1024];
    if (pp > 1024)
        return false;
    int first = how->first_stage_layers, last = how->last_stage_layers;
    if (first > 0 || last > 0) {
        /* fixed first / last stages, the rest even */
        int64_t rest = L - first - last;
        int mid = pp - (first > 0) - (last > 0);
        if (rest < 0 || (mid == 0 && rest != 0) || (mid > 0 && rest % mid != 0))
            return false;
        for (int s = 0; s < pp; s++)
            stage[s] = mid > 0 ? rest / mid : 0;
        if (first > 0)
            stage[0] = first;
        if (last > 0)
            stage[pp - 1] = last;
    } else {
        /* embedding and loss as pipeline layers: L + e + l split evenly */
        int64_t e = how->account_embedding, l = how->account_loss;
        int64_t slots = L + e + l;
        if (slots % pp != 0)
            return false;
        for (int s = 0; s < pp; s++)
            stage[s] = slots / pp;
        stage[0] -= e;
        stage[pp - 1] -= l;
        if (pp == 1 && vpp > 1)
            return false;
    }
    /* each stage over its vpp chunks: the embedding / loss slot belongs to
     * the first / last chunk in model order */
    for (int s = 0; s < pp; s++) {
        int64_t n = stage[s];
        bool e = s == 0 && !(first > 0 || last > 0) && how->account_embedding;
        bool l = s == pp - 1 && !(first > 0 || last > 0) && how->account_loss;
        int64_t slots = n + e + l;
        if (slots % vpp != 0)
            return false;
        for (int k = 0; k < vpp; k++) {
            int64_t c = slots / vpp;
            if (k == 0 && e)
                c--;
            if (k == vpp - 1 && l)
                c--;
            bool slot = (k == 0 && e) || (k == vpp - 1 && l);
            if (c < (slot && how->allow_empty_ends ? 0 : 1))
                return false;
            layers_per_chunk[k * pp + s] = (int)c;
        }
    }
    return true;
}

bool px_split_layout_balanced(int64_t L, int pp, int vpp, bool ends_as_entries,
                              int *layers_per_chunk)
{
    int64_t chunks = (int64_t)pp * vpp, ends = ends_as_entries ? 2 : 0;
    if (pp < 1 || vpp < 1 || L < 1 || chunks > L + ends)
        return false;
    int64_t slots = L + ends, base = slots / chunks, rem = slots % chunks;
    int64_t from = (chunks - rem) / 2; /* the remainder's chunks, centred */
    for (int64_t c = 0; c < chunks; c++) {
        bool first = c == 0, last = c == chunks - 1;
        int64_t n = base + (c >= from && c < from + rem) -
                    (ends_as_entries ? (int64_t)first + (int64_t)last : 0);
        if (n < ((first || last) && ends_as_entries ? 0 : 1))
            return false;
        layers_per_chunk[c] = (int)n;
    }
    return true;
}
