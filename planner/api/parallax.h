/* parallax.h — the C API of libparallax, for bindings (the Python package
 * uses it through ctypes) and for programs that embed the planner.
 *
 * JSON in, JSON out.  Every call takes a request as the text of a JSON
 * object and returns PARALLAX_OK (0) with *result set to the text of a JSON
 * document, or a non-zero status (the px_status codes of px_error.h) with
 * *result set to an error object:
 *
 *   {"error": "--gpus \"abc\": expected an integer in 1..16777216",
 *    "status": "usage error", "code": 12}
 *
 * whose "error" is the message the command-line tool prints.  Free *result
 * with parallax_free().  The calls run the same library functions as the
 * tools (`plan` is px_plan_command), so their results are the tools'.
 * Calls are serialised by a lock (the option parser keeps global state);
 * they may be made from several threads.
 *
 * Versioning: PARALLAX_API_VERSION changes when a call or a request key is
 * removed or changes meaning (the shared library's soname follows it);
 * additions keep it.  parallax_api_version() is the library's, to compare
 * against the header a program was built with. */
#ifndef PARALLAX_H
#define PARALLAX_H

#ifdef __cplusplus
extern "C" {
#endif

#define PARALLAX_API_VERSION 1
#define PARALLAX_OK 0

/* The API version of the library (PARALLAX_API_VERSION it was built with). */
int parallax_api_version(void);

/* The project version, "0.1.0". */
const char *parallax_version(void);

/* plan: every option of `plan` as a key, with dashes or underscores
 * ("global_batch": 2048, "partition": "uniform", "explain": true); a switch
 * is given by true (false: absent); a key whose value is null is ignored.
 * "model" is a preset name, a path, or a model object (a preset object or a
 * Hugging Face config.json object).  The result is `plan --json`'s
 * document. */
int parallax_plan(const char *request, char **result);

/* explain: the same request; the result is {"text": "..."}, the text of
 * `plan --explain` (the table, the memory and time breakdown, the stages
 * and the rule of thumb). */
int parallax_explain(const char *request, char **result);

/* The option names `plan` takes (a JSON array of strings, with dashes). */
int parallax_plan_options(char **result);

/* validate: {"file": PATH (default: the published runs beside the source),
 * "hw_dir": DIR}; the result is `validate --json`'s document. */
int parallax_validate(const char *request, char **result);

/* export: {"plan": PLAN (the object of a plan file, or its path), "to":
 * "megatron" | "nemo" | "torchtitan" | "deepspeed" | "slurm",
 * "plan_path": the plan file the slurm script runs (default: the given
 * path, else "plan.json"), "execute_path": the executor it runs (default
 * "execute")}; the result is {"text": "..."}, the file `export` writes.  A
 * plan the target cannot run is refused (PX_ERR_UNSUPPORTED, the feature
 * named). */
int parallax_export(const char *request, char **result);

/* The model of {"model": NAME | PATH | OBJECT, "name": NAME (optional, to
 * rename it)}: the preset object (docs/model-schema.md) with "params" (the
 * parameter count) added. */
int parallax_model_load(const char *request, char **result);

/* The hardware profile of {"hw": NAME | PATH | OBJECT}
 * (docs/hw-schema.md). */
int parallax_hw_load(const char *request, char **result);

/* calibrate --from-runs: {"runs": [ROW, ...] (rows of the published-runs
 * schema), "hw": BASE, "framework": BASE (profile names or paths),
 * "max_factors": N (optional)}; the result is {"hw": PROFILE, "framework":
 * PROFILE, "fit": TABLE}: the fitted profiles as their files hold them and
 * the fit (factors before and after, each run's error before, after and left
 * out; docs/calibration.md). */
int parallax_calibrate_from_runs(const char *request, char **result);

/* Frees a result (NULL is ignored). */
void parallax_free(char *result);

#ifdef __cplusplus
}
#endif

#endif
