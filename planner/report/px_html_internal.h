/* px_html_internal.h — what the files of the HTML report share:
 * px_html_draw.c (the style sheet, legends, axes and their scales),
 * px_html_timeline.c (the timed pipeline timeline and its drawing), then
 * px_html.c (the plan and compare pages) and px_html_sweep.c (the sweep
 * page).  Not part of the planner's interface. */
#ifndef PX_HTML_INTERNAL_H
#define PX_HTML_INTERNAL_H

#include <stdbool.h>

#include "px_cost.h"
#include "px_html.h"
#include "px_outfile.h"

/* px_html_draw.c */
extern const char px_html_css[];
/* The page's head and title block; px_html_end closes it. */
void px_html_begin(px_buf *b, const char *title, const char *subtitle);
void px_html_end(px_buf *b);
void px_html_legend(px_buf *b, const char *const items[][2], int n);

/* A linear scale for an axis: values lo..hi onto pixels p0..p1, ticks every
 * step (1, 2 or 5 times a power of ten).  zero_based: lo is 0; otherwise
 * the axis is cut below the data and says so. */
typedef struct {
    double lo, hi, step, p0, p1;
    bool zero_based;
} px_html_scale;

/* The scale for values in [vmin, vmax]: from 0 unless the values are
 * within cut_within (a fraction of vmax) of each other, where 0 would
 * hide their differences; then from a round value below vmin. */
double px_html_tick_step(double range, int n); /* ~n ticks over range */
px_html_scale px_html_scale_for(double vmin, double vmax, double cut_within, double p0,
                                double p1);
/* Seconds shown in s, ms or µs by the largest value. */
void px_html_time_unit(double max_s, double *mult, const char **unit);
double px_html_at(const px_html_scale *s, double v); /* the pixel of v, clipped to the axis */
/* A horizontal axis at y (ticks below it, labels "%g" of value * mult,
 * then unit) or a vertical one at x (ticks left of it). */
void px_html_axis_x(px_buf *b, const px_html_scale *s, double y, double mult, const char *unit);
void px_html_axis_y(px_buf *b, const px_html_scale *s, double x, double mult, const char *unit);

/* px_html_timeline.c */
/* The chosen plan's pipeline timeline drawn as the executor runs its
 * schedule; past PX_HTML_STEADY_MAX ops a stage, the steady state between
 * the warm-up and the cool-down is drawn as a few micro-batches and an
 * elision mark with what it leaves out.  *makespan_s, *msg_s: the simulated
 * pipeline's length and one message's time, for the caption. */
#define PX_HTML_STEADY_MAX 48
px_status px_html_timeline(px_buf *b, px_cost_ctx *ctx, const px_parallel *par,
                           const px_stage_prediction *stages, double *makespan_s,
                           double *msg_s, px_error *err);

#endif
