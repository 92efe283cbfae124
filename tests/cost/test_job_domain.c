/* test_job_domain.c — the NVLink domain a job sees (px_job_domain.h)
 * against its closed form: within one domain, or on a single-host node,
 * the profile's node; beyond, the largest divisor of the host count that
 * fits in a domain, times the host's GPUs. */
#include "px_job_domain.h"
#include "px_test.h"

static void load_hw(const char *name, px_hw *hw)
{
    px_error err = {0};
    if (px_hw_load(name, NULL, hw, &err) != PX_OK) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        CHECK(0);
    }
}

/* the closed form, written out independently of the library's loop */
static int expect(int node, int host, long long gpus)
{
    if (host <= 0 || host >= node || gpus <= node || gpus % host != 0)
        return node;
    long long hosts = gpus / host;
    int best = 1;
    for (int s = 1; s <= node / host; s++)
        if (hosts % s == 0)
            best = s;
    return best * host;
}

int main(void)
{
    px_hw gb, h100;
    load_hw("gb200-nvl72", &gb);
    load_hw("h100-sxm", &h100);
    CHECK(gb.gpus_per_node == 72 && gb.gpus_per_host == 4);

    /* a job inside one rack: the whole NVL72 domain */
    CHECK(px_job_domain_gpus(&gb, 64) == 72);
    CHECK(px_job_domain_gpus(&gb, 72) == 72);
    /* 128 GPUs = 32 trays: segments of 16 trays, 64 GPUs a rack */
    CHECK(px_job_domain_gpus(&gb, 128) == 64);
    CHECK(px_job_domain_gpus(&gb, 512) == 64);
    /* 144 GPUs = 36 trays: two full racks */
    CHECK(px_job_domain_gpus(&gb, 144) == 72);
    /* 17 x 5 = 85 trays: segments of 17 */
    CHECK(px_job_domain_gpus(&gb, 340) == 68);
    /* a prime number of trays above 18: one tray a segment */
    CHECK(px_job_domain_gpus(&gb, 4 * 19) == 4);
    /* not whole trays: the profile's node */
    CHECK(px_job_domain_gpus(&gb, 130) == 72);
    /* one host a node (H100): always the node */
    CHECK(px_job_domain_gpus(&h100, 8) == 8);
    CHECK(px_job_domain_gpus(&h100, 1024) == 8);

    for (long long g = 1; g <= 4096; g++)
        CHECK(px_job_domain_gpus(&gb, g) == expect(72, 4, g));
    return px_test_result("test_job_domain");
}
