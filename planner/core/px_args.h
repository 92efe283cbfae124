/* px_args.h — the one command-line parser of every Parallax tool.
 *
 * A tool describes its options as a table of rows, one row per spelling:
 *
 *   static const px_arg rows[] = {
 *       PX_ARG_INT("--gpus", plan_settings, gpus, 1, 1 << 24),
 *       PX_ARG_STR("--model", plan_settings, model),
 *       PX_ARG_ALIAS("--seq-len", "--seq"),
 *       ...
 *   };
 *
 * and px_args_parse() reads argv into the tool's settings struct through
 * getopt_long.  The same rules hold for every tool:
 *   - `--flag value` and `--flag=value` are the same;
 *   - an option given twice (under any of its spellings) is an error: a
 *     script that sets a flag twice has a bug, "the last one wins" hides it;
 *   - abbreviations are refused (a prefix that is unique today is ambiguous
 *     once an option is added);
 *   - `--help` / `-h` and `--version` are always understood.
 * Errors are returned as PX_ERR_USAGE with a message naming the flag and the
 * allowed values; nothing is printed.  Not thread-safe (getopt_long keeps
 * its state in globals). */
#ifndef PX_ARGS_H
#define PX_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "px_error.h"

/* How a row's value is read. */
typedef enum {
    PX_ARGK_SWITCH, /* no value: sets a bool to true */
    PX_ARGK_STR,    /* const char * (points into argv) */
    PX_ARGK_INT,    /* int in [lo, hi] */
    PX_ARGK_I64,    /* int64_t in [lo, hi] */
    PX_ARGK_AMOUNT, /* double > 0, optional suffix K M B T (1e3..1e12) */
    PX_ARGK_CUSTOM, /* read by the row's function */
    PX_ARGK_ALIAS,  /* another spelling of the row named by same_as */
} px_arg_kind;

/* Reads value for flag into the tool's settings (the whole struct, so that
 * one option may set several fields).  Returns PX_OK or a PX_ERR_USAGE error
 * naming the flag and the allowed values. */
typedef px_status (*px_arg_reader)(void *settings, const char *flag, const char *value,
                                   px_error *err);

typedef struct {
    const char *name;    /* "--gpus", or a short option "-o" */
    px_arg_kind kind;
    size_t offset;       /* of the field in the settings struct */
    double lo, hi;       /* PX_ARGK_INT / PX_ARGK_I64: the allowed range */
    px_arg_reader read;  /* PX_ARGK_CUSTOM; also PX_ARGK_SWITCH when set */
    bool takes_value;    /* PX_ARGK_CUSTOM: false = a switch (value NULL) */
    const char *same_as; /* PX_ARGK_ALIAS: the option this spelling is */
    const char *implied; /* PX_ARGK_ALIAS: takes no value and means same_as with this value */
    bool repeatable;     /* PX_ARGK_CUSTOM: may be given several times (each value read) */
} px_arg;

#define PX_ARG_SWITCH(name, type, field) {name, PX_ARGK_SWITCH, offsetof(type, field), 0, 0, NULL, false, NULL, NULL, false}
#define PX_ARG_STR(name, type, field) {name, PX_ARGK_STR, offsetof(type, field), 0, 0, NULL, true, NULL, NULL, false}
#define PX_ARG_INT(name, type, field, lo, hi) {name, PX_ARGK_INT, offsetof(type, field), lo, hi, NULL, true, NULL, NULL, false}
#define PX_ARG_I64(name, type, field, lo, hi) {name, PX_ARGK_I64, offsetof(type, field), lo, hi, NULL, true, NULL, NULL, false}
#define PX_ARG_AMOUNT(name, type, field) {name, PX_ARGK_AMOUNT, offsetof(type, field), 0, 0, NULL, true, NULL, NULL, false}
#define PX_ARG_CUSTOM(name, reader) {name, PX_ARGK_CUSTOM, 0, 0, 0, reader, true, NULL, NULL, false}
#define PX_ARG_CUSTOM_SWITCH(name, reader) {name, PX_ARGK_CUSTOM, 0, 0, 0, reader, false, NULL, NULL, false}
#define PX_ARG_CUSTOM_REPEAT(name, reader) {name, PX_ARGK_CUSTOM, 0, 0, 0, reader, true, NULL, NULL, true}
#define PX_ARG_ALIAS(name, target) {name, PX_ARGK_ALIAS, 0, 0, 0, NULL, false, target, NULL, false}
#define PX_ARG_MEANS(name, target, value) {name, PX_ARGK_ALIAS, 0, 0, 0, NULL, false, target, value, false}

/* What the command line asks for besides its options. */
typedef enum { PX_ARGS_RUN = 0, PX_ARGS_HELP, PX_ARGS_VERSION } px_args_action;

typedef struct {
    px_args_action action;
    int n_positional;      /* arguments that are not options, in order */
    const char **positional; /* [n_positional], points into argv; free with px_args_free */
} px_args_result;

/* Reads argv[1..argc-1] into settings by the table rows[n_rows].  Arguments
 * that are not options are collected in res->positional (max_positional >= 0
 * caps their number: more is a usage error naming the extra one).  Returns
 * PX_OK or PX_ERR_USAGE / PX_ERR_NOMEM with err filled. */
px_status px_args_parse(const px_arg *rows, int n_rows, int argc, char **argv,
                        void *settings, int max_positional, px_args_result *res,
                        px_error *err);

void px_args_free(px_args_result *res);

/* The table's option names as a JSON array text ("gpus", "global-batch",
 * ... without the leading dashes; aliases included), for bindings.  Writes
 * at most buf_len bytes. */
void px_args_names_json(const px_arg *rows, int n_rows, char *buf, size_t buf_len);

/* Whether the option spelled name ("--gpus") takes a value: 1 yes, 0 no (a
 * switch), -1 no such option. */
int px_args_takes_value(const px_arg *rows, int n_rows, const char *name);

/* The spelling of the row name stands for ("--mbs" -> "--micro-batch",
 * "--no-sp" -> "--sp"; a row that is no alias: its own name); NULL when
 * there is no such option.  Two spellings of one option have one canonical
 * name, so a caller can tell whether an option was given under any of them. */
const char *px_args_canonical(const px_arg *rows, int n_rows, const char *name);

/* For a tool's main: the message for a failed command ("plan: --gpus
 * needs a value\n(plan --help lists the options)" for a usage error,
 * "plan: error: MESSAGE" otherwise, no final newline) and the exit status
 * (0 for PX_OK, 2 for a usage error, 1 for any other). */
void px_args_error_text(const char *tool, const px_error *err, char *buf, size_t buf_len);
int px_args_exit_status(px_status st);

/* A command that writes its report to out. */
typedef px_status (*px_command_fn)(int argc, char **argv, FILE *out, px_error *err);

/* The whole main of a tool that is one command: runs it on stdout, flushes
 * stdout (a failed write is the command's failure), prints the message of
 * px_args_error_text on stderr and returns the exit status. */
int px_args_run_command(const char *tool, px_command_fn command, int argc, char **argv);

/* The project version ("0.1.0", from meson's project version). */
const char *px_version(void);

/* Value readers shared by tools: a positive amount with K/M/B/T suffix, an
 * integer in [lo, hi].  flag names the option in messages. */
px_status px_args_read_amount(const char *flag, const char *s, double *out, px_error *err);
px_status px_args_read_int(const char *flag, const char *s, double lo, double hi,
                           long long *out, px_error *err);

/* "on"/"off" into *out (1/0). */
px_status px_args_read_on_off(const char *flag, const char *s, int *out, px_error *err);

#endif
