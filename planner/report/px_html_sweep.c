/* px_html_sweep.c — the page of a sweep (px_html.h): one chart a metric
 * (step time, MFU, memory per GPU) against the first swept key, one line a
 * series (the values of the other keys), and the points in a table. */
#include "px_html_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const palette[10] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

/* The distinct x values and series, in the order they first appear. */
typedef struct {
    const char **xs, **series;
    int n_x, n_series;
    int *xi, *si; /* each point's */
} sweep_index;

static int find_or_add(const char **list, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i], s))
            return i;
    list[*n] = s;
    return (*n)++;
}

static bool index_points(const px_html_sweep_point *pts, int n, sweep_index *ix)
{
    ix->xs = calloc((size_t)n, sizeof *ix->xs);
    ix->series = calloc((size_t)n, sizeof *ix->series);
    ix->xi = calloc((size_t)n, sizeof *ix->xi);
    ix->si = calloc((size_t)n, sizeof *ix->si);
    ix->n_x = ix->n_series = 0;
    if (!ix->xs || !ix->series || !ix->xi || !ix->si)
        return false;
    for (int i = 0; i < n; i++) {
        ix->xi[i] = find_or_add(ix->xs, &ix->n_x, pts[i].x);
        ix->si[i] = find_or_add(ix->series, &ix->n_series, pts[i].series);
    }
    return true;
}

static void index_free(sweep_index *ix)
{
    free(ix->xs);
    free(ix->series);
    free(ix->xi);
    free(ix->si);
}

typedef enum { M_STEP, M_MFU, M_MEM } metric;

static double value_of(const px_html_sweep_point *p, metric m)
{
    return m == M_STEP ? p->step_s : m == M_MFU ? p->mfu : (double)p->mem_bytes;
}

/* One chart: the metric's axis (step time cut above 0 when the points are
 * within 10 % of each other), x as the swept values at equal spacing, a
 * line and dots a series; a point without a plan is a cross on the x axis
 * with its reason. */
static void chart(px_buf *b, const px_html_sweep_point *pts, int n, const sweep_index *ix,
                  metric m, const char *x_key)
{
    static const char *const cls[3] = {"step", "mfu", "memory"};
    static const char *const unit[3] = {"s", "%", "GB"};
    static const double mult[3] = {1.0, 100.0, 1e-9};
    const double left = 80, width = 760, top = 16, plot_h = 200;
    double vmin = INFINITY, vmax = 0;
    for (int i = 0; i < n; i++)
        if (pts[i].ok) {
            vmin = fmin(vmin, value_of(&pts[i], m));
            vmax = fmax(vmax, value_of(&pts[i], m));
        }
    double base = top + plot_h;
    px_html_scale ys = px_html_scale_for(isfinite(vmin) ? vmin : 0, vmax,
                                         m == M_STEP ? 0.10 : 0.0, base, top);
    double dx = width / (ix->n_x > 0 ? ix->n_x : 1);
    px_buf_printf(b, "<svg class=\"sweep-chart %s\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%.0f\" height=\"%.0f\" data-points=\"%d\">\n",
                  cls[m], left + width + 60, base + 50, n);
    px_html_axis_y(b, &ys, left, mult[m], unit[m]);
    px_buf_printf(b, "<line class=\"axis\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\"/>",
                  left, left + width, base, base);
    for (int k = 0; k < ix->n_x; k++) {
        px_buf_printf(b, "<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">",
                      left + (k + 0.5) * dx, base + 15);
        px_buf_html(b, ix->xs[k]);
        px_buf_puts(b, "</text>");
    }
    px_buf_printf(b, "<text class=\"unit\" x=\"%.0f\" y=\"%.0f\">", left + width + 6, base + 15);
    px_buf_html(b, x_key);
    px_buf_puts(b, "</text>\n");
    for (int s = 0; s < ix->n_series; s++) {
        const char *colour = palette[s % 10];
        px_buf_printf(b, "<g class=\"series\" data-series=\"%d\"><polyline fill=\"none\" "
                         "stroke=\"%s\" stroke-width=\"2\" points=\"",
                      s, colour);
        for (int i = 0; i < n; i++)
            if (ix->si[i] == s && pts[i].ok)
                px_buf_printf(b, "%.1f,%.1f ", left + (ix->xi[i] + 0.5) * dx,
                              px_html_at(&ys, value_of(&pts[i], m)));
        px_buf_puts(b, "\"/>");
        for (int i = 0; i < n; i++) {
            if (ix->si[i] != s)
                continue;
            double x = left + (ix->xi[i] + 0.5) * dx;
            if (pts[i].ok) {
                px_buf_printf(b, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                                 "fill=\"%s\" data-value=\"%.9g\"><title>%.4g %s: ",
                              x, px_html_at(&ys, value_of(&pts[i], m)), colour,
                              value_of(&pts[i], m), value_of(&pts[i], m) * mult[m], unit[m]);
                px_buf_html(b, pts[i].layout);
            } else {
                px_buf_printf(b, "<text class=\"no-plan\" x=\"%.1f\" y=\"%.1f\" "
                                 "text-anchor=\"middle\" style=\"fill:%s;font-size:14px\">"
                                 "&#215;<title>no plan: ",
                              x, base - 3, colour);
                px_buf_html(b, pts[i].reason);
            }
            px_buf_puts(b, pts[i].ok ? "</title></circle>" : "</title></text>");
        }
        px_buf_puts(b, "</g>\n");
    }
    px_buf_puts(b, "</svg>\n");
}

static void series_legend(px_buf *b, const sweep_index *ix)
{
    if (ix->n_series < 2 && (ix->n_series == 0 || !ix->series[0][0]))
        return;
    px_buf_puts(b, "<div class=\"legend\">");
    for (int s = 0; s < ix->n_series; s++) {
        px_buf_printf(b, "<span><i style=\"background:%s\"></i>", palette[s % 10]);
        px_buf_html(b, ix->series[s]);
        px_buf_puts(b, "</span>");
    }
    px_buf_puts(b, "</div>\n");
}

static void points_table(px_buf *b, const px_html_sweep_point *pts, int n, const char *x_key)
{
    px_buf_puts(b, "<table class=\"sweep-points\"><tr><th class=\"l\">");
    px_buf_html(b, x_key);
    px_buf_puts(b, "</th><th class=\"l\">series</th><th class=\"l\">best layout</th>"
                   "<th>step [s]</th><th>tokens/s</th><th>MFU</th><th>mem [GB]</th></tr>\n");
    for (int i = 0; i < n; i++) {
        const px_html_sweep_point *p = &pts[i];
        px_buf_printf(b, "<tr class=\"point-row%s\"><td class=\"l\">", p->ok ? "" : " no-plan");
        px_buf_html(b, p->x);
        px_buf_puts(b, "</td><td class=\"l\">");
        px_buf_html(b, p->series);
        px_buf_puts(b, "</td><td class=\"l\"");
        if (!p->ok) {
            px_buf_puts(b, " colspan=\"5\">no plan: ");
            px_buf_html(b, p->reason);
            px_buf_puts(b, "</td></tr>\n");
            continue;
        }
        px_buf_puts(b, ">");
        px_buf_html(b, p->layout);
        px_buf_printf(b, "</td><td>%.4g</td><td>%.4g</td><td>%.1f %%</td><td>%.1f</td></tr>\n",
                      p->step_s, p->tokens_per_s, 100.0 * p->mfu, (double)p->mem_bytes / 1e9);
    }
    px_buf_puts(b, "</table>\n");
}

px_status px_html_sweep_write(const char *path, const char *title, const char *subtitle,
                              const char *x_key, const px_html_sweep_point *pts, int n,
                              px_error *err)
{
    sweep_index ix;
    px_status st = PX_OK;
    if (!index_points(pts, n, &ix)) {
        index_free(&ix);
        return PX_FAIL(err, PX_ERR_NOMEM, "HTML report: out of memory");
    }
    px_buf b = {0};
    px_html_begin(&b, title, subtitle);
    static const char *const heads[3] = {
        "Step time of the best plan (seconds per optimizer step)",
        "MFU of the best plan (model FLOPs over the GPUs' dense peak)",
        "Memory per GPU of the best plan (the worst stage, GB = 1e9 bytes)"};
    for (int m = 0; m < 3; m++) {
        px_buf_printf(&b, "<h2>%s</h2>\n", heads[m]);
        series_legend(&b, &ix);
        chart(&b, pts, n, &ix, (metric)m, x_key);
    }
    px_buf_puts(&b, "<h2>Every point</h2>\n<p class=\"note\">A cross on a chart's x axis: "
                   "no plan at that point (the reason in this table).</p>\n");
    points_table(&b, pts, n, x_key);
    px_html_end(&b);
    st = px_buf_write(&b, path, err);
    px_buf_free(&b);
    index_free(&ix);
    return st;
}
