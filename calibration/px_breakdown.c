/* px_breakdown.c — predicted vs measured time by class (px_breakdown.h). */
#include "px_breakdown.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

static const char *const LABELS[PX_BD_ROWS] = {
    "GEMM", "attention", "element-wise", "exposed communication",
    "bubble + pipeline p2p", "optimizer", "other (untraced)"};

const char *px_breakdown_key(int i)
{
    return i == PX_BD_CLASSES ? "other" : px_report_class_key(i);
}

const char *px_breakdown_label(int i)
{
    return i >= 0 && i < PX_BD_ROWS ? LABELS[i] : "?";
}

px_status px_breakdown_from_report(const px_report_file *rep, const char *path,
                                   px_breakdown *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    if (!rep->has_classes)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "--breakdown needs the objects measured_class_s and "
                            "predicted_class_s (execute writes them on the cpu backend)");
    const px_report_classes *c = &rep->classes;
    double sum_p = 0.0, sum_m = 0.0;
    for (int i = 0; i < PX_BD_CLASSES; i++) {
        out->pred[i] = c->pred[i];
        out->meas[i] = c->meas[i];
        sum_p += c->pred[i];
        sum_m += c->meas[i];
    }
    out->ranks = c->ranks;
    out->pred_step = rep->predicted.step_time_s;
    out->meas_step = rep->measured.step_time_s;
    out->pred[PX_BD_CLASSES] = out->pred_step - sum_p;
    out->meas[PX_BD_CLASSES] = out->meas_step - sum_m;
    return PX_OK;
}

static double step_err(const px_breakdown *b, int i)
{
    return b->meas_step > 0.0 ? (b->pred[i] - b->meas[i]) / b->meas_step : NAN;
}

void px_breakdown_print(FILE *f, const char *label, int label_width, const px_breakdown *b)
{
    for (int i = 0; i <= PX_BD_ROWS; i++) {
        bool total = i == PX_BD_ROWS;
        double p = total ? b->pred_step : b->pred[i], m = total ? b->meas_step : b->meas[i];
        double e = b->meas_step > 0.0 ? (p - m) / b->meas_step : NAN;
        fprintf(f, "%-*s %-22s | %9.4f %9.4f %+9.4f | %+7.1f%%\n", label_width, label,
                total ? "step" : LABELS[i], p, m, p - m, 100.0 * e);
    }
}

json_t *px_breakdown_json(const px_breakdown *b)
{
    json_t *o = json_object();
    for (int i = 0; i < PX_BD_ROWS; i++) {
        double e = step_err(b, i);
        json_object_set_new(o, px_breakdown_key(i),
                            json_pack("{s:f, s:f, s:o}", "predicted_s", b->pred[i], "measured_s",
                                      b->meas[i], "step_error",
                                      isfinite(e) ? json_real(e) : json_null()));
    }
    json_object_set_new(o, "step", json_pack("{s:f, s:f}", "predicted_s", b->pred_step,
                                              "measured_s", b->meas_step));
    json_object_set_new(o, "ranks", json_integer(b->ranks));
    return o;
}
