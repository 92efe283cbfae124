/* px_html_draw.c — the HTML report's style sheet, legends and axes
 * (px_html_internal.h). */
#include "px_html_internal.h"

#include <math.h>

const char px_html_css[] =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;"
    "border-bottom:1px solid #ccc}h3{font-size:15px;margin:18px 0 4px}"
    "p.sub{color:#555;margin:0 0 12px}p.note{color:#555;font-size:12px;margin:2px 0 8px}"
    "table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}"
    "th{background:#f2f2f2}td.l,th.l{text-align:left}"
    "tr.chosen td{font-weight:bold}"
    "svg text{font-family:sans-serif;font-size:11px;fill:#222}"
    "svg text.unit{font-style:italic;fill:#555}svg text.cut{fill:#d62728}"
    ".op-F{fill:#4e79a7}.op-B{fill:#59a14f}.op-W{fill:#f28e2b}"
    ".idle{fill:#ececec}.comm{fill:#b07aa1}"
    ".elided{fill:#fff;stroke:#888;stroke-dasharray:4 3}"
    ".m-weights{fill:#4e79a7}.m-grads{fill:#76b7b2}.m-optimizer{fill:#edc948}"
    ".m-activations{fill:#e15759}.m-buffers{fill:#bab0ac}.m-runtime{fill:#9c755f}"
    ".t-compute{fill:#4e79a7}.t-comm{fill:#b07aa1}.t-bubble{fill:#d9d9d9}"
    ".t-optimizer{fill:#edc948}.t-other{fill:#bab0ac}"
    ".limit{stroke:#d62728;stroke-width:2;stroke-dasharray:6 3}"
    ".hbm{stroke:#555;stroke-width:1}.axis{stroke:#888;stroke-width:1}"
    ".grid{stroke:#eee;stroke-width:1}"
    ".meas{stroke:#000;stroke-width:3}.pred{stroke:#4e79a7;stroke-width:3;"
    "stroke-dasharray:3 2}"
    ".legend span{display:inline-block;margin-right:14px;font-size:12px}"
    ".legend i{display:inline-block;width:12px;height:12px;margin-right:4px;"
    "vertical-align:-2px}";

void px_html_begin(px_buf *b, const char *title, const char *subtitle)
{
    px_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    px_buf_html(b, title);
    px_buf_printf(b, "</title><style>%s</style></head><body>\n<h1>", px_html_css);
    px_buf_html(b, title);
    px_buf_puts(b, "</h1>\n<p class=\"sub\">");
    px_buf_html(b, subtitle);
    px_buf_puts(b, "</p>\n");
}

void px_html_end(px_buf *b)
{
    px_buf_puts(b, "</body></html>\n");
}

void px_html_legend(px_buf *b, const char *const items[][2], int n)
{
    px_buf_puts(b, "<div class=\"legend\">");
    for (int i = 0; i < n; i++)
        px_buf_printf(b, "<span><i style=\"background:%s\"></i>%s</span>", items[i][1],
                      items[i][0]);
    px_buf_puts(b, "</div>\n");
}

/* A round step for axis ticks: 1, 2 or 5 times a power of ten, ~n ticks. */
double px_html_tick_step(double range, int n)
{
    if (!(range > 0))
        return 1.0;
    double raw = range / n, p = pow(10.0, floor(log10(raw)));
    double f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

px_html_scale px_html_scale_for(double vmin, double vmax, double cut_within, double p0,
                                double p1)
{
    px_html_scale s = {0.0, vmax > 0 ? vmax : 1.0, 0.0, p0, p1, true};
    if (vmax > vmin && vmin > 0 && vmax - vmin < cut_within * vmax) {
        double spread = vmax - vmin > 0 ? vmax - vmin : 0.01 * vmax;
        double step = px_html_tick_step(spread * 2.0, 4);
        s.lo = floor((vmin - 0.5 * spread) / step) * step;
        if (s.lo > 0)
            s.zero_based = false;
        else
            s.lo = 0.0;
    }
    s.step = px_html_tick_step(s.hi - s.lo, 5);
    s.hi = ceil(s.hi / s.step - 1e-9) * s.step; /* the top on a tick */
    if (s.hi <= s.lo)
        s.hi = s.lo + s.step;
    return s;
}

void px_html_time_unit(double max_s, double *mult, const char **unit)
{
    *mult = max_s >= 1.0 ? 1.0 : max_s >= 1e-3 ? 1e3 : 1e6;
    *unit = max_s >= 1.0 ? "s" : max_s >= 1e-3 ? "ms" : "\xc2\xb5s"; /* µs in UTF-8 */
}

double px_html_at(const px_html_scale *s, double v)
{
    double f = (v - s->lo) / (s->hi - s->lo);
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    return s->p0 + f * (s->p1 - s->p0);
}

void px_html_axis_x(px_buf *b, const px_html_scale *s, double y, double mult, const char *unit)
{
    px_buf_printf(b, "<g class=\"axis-x\" data-lo=\"%.9g\" data-hi=\"%.9g\" data-unit=\"%s\">"
                     "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                  s->lo * mult, s->hi * mult, unit, s->p0, s->p1, y, y);
    for (int i = 0; i <= 50; i++) {
        double v = s->lo + i * s->step;
        if (v > s->hi * (1 + 1e-9))
            break;
        double x = px_html_at(s, v);
        px_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                         "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g"
                         "</text>",
                      x, x, y, y + 4, x, y + 15, v * mult);
    }
    px_buf_printf(b, "<text class=\"unit\" x=\"%.1f\" y=\"%.1f\">%s</text>", s->p1 + 18, y + 15,
                  unit);
    if (!s->zero_based)
        px_buf_printf(b, "<text class=\"cut\" x=\"%.1f\" y=\"%.1f\">axis from %g %s, not 0"
                         "</text>",
                      s->p0, y + 28, s->lo * mult, unit);
    px_buf_puts(b, "</g>");
}

void px_html_axis_y(px_buf *b, const px_html_scale *s, double x, double mult, const char *unit)
{
    px_buf_printf(b, "<g class=\"axis-y\" data-lo=\"%.9g\" data-hi=\"%.9g\" data-unit=\"%s\">"
                     "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                  s->lo * mult, s->hi * mult, unit, x, x, s->p0, s->p1);
    for (int i = 0; i <= 50; i++) {
        double v = s->lo + i * s->step;
        if (v > s->hi * (1 + 1e-9))
            break;
        double y = px_html_at(s, v);
        px_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                         "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g"
                         "</text>",
                      x - 4, x, y, y, x - 6, y + 4, v * mult);
    }
    px_buf_printf(b, "<text class=\"unit\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                  x - 6, s->p1 - 8, unit);
    if (!s->zero_based)
        px_buf_printf(b, "<text class=\"cut\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">from "
                         "%g, not 0</text>",
                      x - 6, s->p0 + 16, s->lo * mult);
    px_buf_puts(b, "</g>");
}
