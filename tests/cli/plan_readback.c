/* plan_readback.c — test helper: reads a plan file with px_plan_read and
 * prints the fields the CLI tests compare with `plan --json`, one
 * "key value" a line; with a second argument writes the plan read back
 * there (px_plan_write) so the test can compare the two files byte for byte.
 * Exit 1 (message on stderr) when the file is bad. */
#include <stdio.h>

#include "px_plan.h"

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: plan_readback PLAN.json [REWRITTEN.json]\n");
        return 2;
    }
    static px_plan plan;
    px_error err;
    if (px_plan_read(argv[1], &plan, &err) != PX_OK) {
        char buf[1200];
        px_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "plan_readback: %s\n", buf);
        return 1;
    }
    const px_parallel *p = &plan.par;
    printf("model %s\nhw %s\n", plan.model.name, plan.hw.name);
    printf("tp %d\ncp %d\nep %d\netp %d\npp %d\nvpp %d\ndp %d\nsp %d\nzero %d\n", p->tp, p->cp,
           p->ep, p->etp, p->pp, p->vpp, p->dp, p->sp ? 1 : 0, p->zero);
    printf("micro_batch %lld\nnum_microbatches %lld\nschedule %s\nrecompute %s\n",
           (long long)p->micro_batch, (long long)p->n_micro, px_schedule_name(p->schedule),
           px_recompute_name(p->recompute));
    printf("total_bytes %lld\nstep_time_s %.9g\nmfu %.9g\n", (long long)plan.pred.mem.total,
           plan.pred.time.step_s, plan.pred.mfu);
    if (argc == 3 && px_plan_write(&plan, argv[2], &err) != PX_OK) {
        char buf[1200];
        px_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "plan_readback: %s\n", buf);
        return 1;
    }
    return 0;
}
