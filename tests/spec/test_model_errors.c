/* test_model_errors.c — every way a model spec can be wrong gives the right
 * status and a message that names the problem and the allowed values. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"
#include "px_model.h"
#include "px_test.h"

static const char *good_fields =
    "  \"block\": \"llama\", \"hidden\": 64, \"n_layers\": 2, \"n_heads\": 4,\n"
    "  \"ffn\": 128, \"vocab\": 256, \"seq_len\": 32";

/* Loads a preset-schema text; returns the status, err filled. */
static px_status try_text(const char *name, const char *text, px_error *err, char *path,
                          size_t path_len)
{
    px_model m;
    data_write(name, text, path, path_len);
    px_error_clear(err);
    return px_model_load(path, NULL, &m, err);
}

int main(void)
{
    px_model m;
    px_error err;
    char path[512], text[2048];

    /* Unknown preset: NOT_FOUND, listing names and aliases. */
    px_error_clear(&err);
    CHECK(px_model_load("llama-99b", NULL, &m, &err) == PX_ERR_NOT_FOUND);
    CHECK_MSG(strstr(err.msg, "llama-99b") && strstr(err.msg, "llama3-70b") &&
                  strstr(err.msg, "70b)") && strstr(err.msg, "tiny-moe") &&
                  strstr(err.msg, "deepseek-v3"),
              "%s", err.msg);

    /* A well-formed minimal preset loads, with derived defaults. */
    snprintf(text, sizeof text, "{\"name\": \"mini\",\n%s}\n", good_fields);
    CHECK(try_text("mini.json", text, &err, path, sizeof path) == PX_OK);
    CHECK(px_model_load(path, NULL, &m, &err) == PX_OK);
    CHECK(m.n_kv_heads == 4 && m.head_dim == 16 && m.moe_layer_freq == 1);

    /* Malformed JSON: PARSE with file, line and column. */
    snprintf(text, sizeof text, "{\"name\": \"bad\",\n  \"hidden\": 64,,\n}\n");
    CHECK(try_text("bad.json", text, &err, path, sizeof path) == PX_ERR_PARSE);
    CHECK(strcmp(err.file, path) == 0);
    CHECK_MSG(err.line == 2 && err.column > 0, "line %d col %d", err.line, err.column);
    char buf[2048];
    px_error_format(&err, buf, sizeof buf);
    char want[600];
    snprintf(want, sizeof want, "%s:2:", path);
    CHECK_MSG(strncmp(buf, want, strlen(want)) == 0, "%s", buf);

    /* Unknown key: named, with the allowed keys. */
    snprintf(text, sizeof text, "{\"name\": \"typo\", \"hiden\": 3,\n%s}\n", good_fields);
    CHECK(try_text("typo.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "\"hiden\"") && strstr(err.msg, "allowed keys") &&
                  strstr(err.msg, "n_kv_heads") && strstr(err.msg, "aliases"),
              "%s", err.msg);
    CHECK(strcmp(err.file, path) == 0);

    /* Missing required field. */
    snprintf(text, sizeof text,
             "{\"name\": \"novocab\", \"block\": \"llama\", \"hidden\": 64, \"n_layers\": 2,\n"
             " \"n_heads\": 4, \"ffn\": 128, \"seq_len\": 32}\n");
    CHECK(try_text("novocab.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "vocab: missing required field") != NULL, "%s", err.msg);

    /* Bad enum: the allowed values. */
    snprintf(text, sizeof text,
             "{\"name\": \"bert\", \"block\": \"bert\", \"hidden\": 64, \"n_layers\": 2,\n"
             " \"n_heads\": 4, \"ffn\": 128, \"vocab\": 256, \"seq_len\": 32}\n");
    CHECK(try_text("bert.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "block: \"bert\" is not one of gpt, llama") != NULL, "%s",
              err.msg);

    /* Wrong type. */
    snprintf(text, sizeof text, "{\"name\": \"t\", \"n_kv_heads\": \"two\",\n%s}\n", good_fields);
    CHECK(try_text("type.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "n_kv_heads: expected an integer") != NULL, "%s", err.msg);

    /* Out of range and inconsistent values. */
    snprintf(text, sizeof text, "{\"name\": \"neg\", \"n_experts\": -1,\n%s}\n", good_fields);
    CHECK(try_text("neg.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "n_experts") != NULL, "%s", err.msg);
    snprintf(text, sizeof text, "{\"name\": \"gqa\", \"n_kv_heads\": 3,\n%s}\n", good_fields);
    CHECK(try_text("gqa.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "n_kv_heads 3") && strstr(err.msg, "divide"), "%s", err.msg);
    snprintf(text, sizeof text, "{\"name\": \"moe\", \"n_experts\": 4, \"top_k\": 5,\n"
                                "  \"moe_ffn\": 32,\n%s}\n", good_fields);
    CHECK(try_text("moe.json", text, &err, path, sizeof path) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "top_k") != NULL, "%s", err.msg);

    /* Unreadable file: IO. */
    px_error_clear(&err);
    CHECK(px_model_load("/nonexistent/x.json", NULL, &m, &err) == PX_ERR_IO);

    /* PARALLAX_MODELS_DIR overrides the default folder; a preset there is
     * found by name, and aliases are searched. */
    snprintf(text, sizeof text, "{\"name\": \"mymodel\", \"aliases\": [\"mm\"],\n%s}\n",
             good_fields);
    data_write("mymodel.json", text, path, sizeof path);
    setenv("PARALLAX_MODELS_DIR", data_tmp(), 1);
    CHECK(strcmp(px_models_dir_default(), data_tmp()) == 0);
    px_error_clear(&err);
    CHECK_MSG(px_model_load("mm", NULL, &m, &err) == PX_OK, "%s", err.msg);
    CHECK(strcmp(m.name, "mymodel") == 0);
    unsetenv("PARALLAX_MODELS_DIR");
    CHECK(strstr(px_models_dir_default(), "/models") != NULL);

    data_cleanup();
    return px_test_result("model_errors");
}
