/* px_breakdown.c — predicted vs measured time by class (px_breakdown.h). */
#include "px_breakdown.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

static const char *const KEYS[PX_BD_ROWS] = {"gemm", "attention", "elementwise", "comm",
                                             "p2p",  "optimizer", "other"};
static const char *const LABELS[PX_BD_ROWS] = {
    "GEMM", "attention", "element-wise", "exposed communication",
    "bubble + pipeline p2p", "optimizer", "other (untraced)"};

const char *px_breakdown_key(int i)
{
    return i >= 0 && i < PX_BD_ROWS ? KEYS[i] : "?";
}

const char *px_breakdown_label(int i)
{
    return i >= 0 && i < PX_BD_ROWS ? LABELS[i] : "?";
}

static bool finite_nonneg(json_t *v, double *out)
{
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0.0;
}

/* measured_class_s.KEY: one number >= 0 per rank; its mean into *out. */
static px_status read_rank_mean(const char *path, json_t *meas, const char *key, int *ranks,
                                double *out, px_error *err)
{
    json_t *a = json_object_get(meas, key);
    if (!json_is_array(a) || json_array_size(a) == 0 ||
        (*ranks > 0 && (int)json_array_size(a) != *ranks))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "measured_class_s.%s: expected an array of seconds, one per rank%s",
                            key, *ranks > 0 ? " (as many as the other classes)" : "");
    *ranks = (int)json_array_size(a);
    double sum = 0.0, v;
    for (int r = 0; r < *ranks; r++) {
        if (!finite_nonneg(json_array_get(a, (size_t)r), &v))
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "measured_class_s.%s[%d]: expected seconds >= 0", key, r);
        sum += v;
    }
    *out = sum / (double)*ranks;
    return PX_OK;
}

static px_status read_objects(const char *path, json_t *root, px_breakdown *out, px_error *err)
{
    json_t *meas = json_object_get(root, "measured_class_s");
    json_t *pred = json_object_get(root, "predicted_class_s");
    if (!json_is_object(meas) || !json_is_object(pred))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "--breakdown needs the objects measured_class_s and "
                            "predicted_class_s (execute writes them on the cpu backend)");
    double sum_p = 0.0, sum_m = 0.0;
    for (int i = 0; i <= PX_BD_CLASSES; i++) {
        const char *key = i < PX_BD_CLASSES ? KEYS[i] : "step";
        double *m = i < PX_BD_CLASSES ? &out->meas[i] : &out->meas_step;
        double *p = i < PX_BD_CLASSES ? &out->pred[i] : &out->pred_step;
        px_status st = read_rank_mean(path, meas, key, &out->ranks, m, err);
        if (st)
            return st;
        if (!finite_nonneg(json_object_get(pred, key), p))
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "predicted_class_s.%s: expected seconds >= 0", key);
        if (i < PX_BD_CLASSES) {
            sum_p += *p;
            sum_m += *m;
        }
    }
    out->pred[PX_BD_CLASSES] = out->pred_step - sum_p;
    out->meas[PX_BD_CLASSES] = out->meas_step - sum_m;
    return PX_OK;
}

px_status px_breakdown_read(const char *path, px_breakdown *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        return px_error_set(err, PX_ERR_PARSE, path, je.line, je.column, "%s", je.text);
    px_status st = read_objects(path, root, out, err);
    json_decref(root);
    return st;
}

static double step_err(const px_breakdown *b, int i)
{
    return b->meas_step > 0.0 ? (b->pred[i] - b->meas[i]) / b->meas_step : NAN;
}

void px_breakdown_print(FILE *f, const char *label, const px_breakdown *b)
{
    for (int i = 0; i <= PX_BD_ROWS; i++) {
        bool total = i == PX_BD_ROWS;
        double p = total ? b->pred_step : b->pred[i], m = total ? b->meas_step : b->meas[i];
        double e = b->meas_step > 0.0 ? (p - m) / b->meas_step : NAN;
        fprintf(f, "%-44.44s %-22s | %9.4f %9.4f %+9.4f | %+7.1f%%\n", label,
                total ? "step" : LABELS[i], p, m, p - m, 100.0 * e);
    }
}

json_t *px_breakdown_json(const px_breakdown *b)
{
    json_t *o = json_object();
    for (int i = 0; i < PX_BD_ROWS; i++) {
        double e = step_err(b, i);
        json_object_set_new(o, KEYS[i],
                            json_pack("{s:f, s:f, s:o}", "predicted_s", b->pred[i], "measured_s",
                                      b->meas[i], "step_error",
                                      isfinite(e) ? json_real(e) : json_null()));
    }
    json_object_set_new(o, "step", json_pack("{s:f, s:f}", "predicted_s", b->pred_step,
                                              "measured_s", b->meas_step));
    json_object_set_new(o, "ranks", json_integer(b->ranks));
    return o;
}
