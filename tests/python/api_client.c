/* api_client.c — a program built against the installed parallax.h and
 * parallax.pc (test_install.sh): prints the answer of one C API call.
 *   api_client plan|explain|model|hw REQUEST_JSON
 * Exit status: the call's status (0: PARALLAX_OK). */
#include <parallax.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: api_client plan|explain|model|hw REQUEST_JSON\n");
        return 100;
    }
    if (parallax_api_version() != PARALLAX_API_VERSION) {
        fprintf(stderr, "api version %d, header %d\n", parallax_api_version(),
                PARALLAX_API_VERSION);
        return 101;
    }
    char *result = NULL;
    int rc;
    if (!strcmp(argv[1], "plan"))
        rc = parallax_plan(argv[2], &result);
    else if (!strcmp(argv[1], "explain"))
        rc = parallax_explain(argv[2], &result);
    else if (!strcmp(argv[1], "model"))
        rc = parallax_model_load(argv[2], &result);
    else if (!strcmp(argv[1], "hw"))
        rc = parallax_hw_load(argv[2], &result);
    else
        return 100;
    if (result)
        fputs(result, stdout);
    parallax_free(result);
    return rc;
}
