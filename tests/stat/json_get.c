/*
 * json_get.c - print one value of each JSON document on standard input,
 * for the shell tests of mpikvs-stat --json (no jq needed).
 *
 *   json_get PATH < documents
 *
 * PATH is members and array indices joined by dots, e.g.
 * "nodes.0.tables.0.counters.dht.node.gets"; "." is the document itself,
 * and "#" after a path prints the length of the array or object there
 * ("regions.#").  For every document (one after the other, as --watch
 * prints them) one line: a string as it is, a number, true, false,
 * null, or an array or object as compact JSON.  Exits 1 if a document is
 * not JSON or lacks PATH (printing "MISSING" for it), 2 on bad usage.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *walk(json_t *v, const char *path, int *count_it)
{
    char *copy = strdup(path), *save = NULL, *part;

    *count_it = 0;
    if (!copy)
        return NULL;
    for (part = strtok_r(copy, ".", &save); v && part;
         part = strtok_r(NULL, ".", &save)) {
        if (!strcmp(part, "#")) {
            *count_it = 1;
            break;
        }
        if (json_is_array(v)) {
            char *end;
            unsigned long i = strtoul(part, &end, 10);
            v = *end ? NULL : json_array_get(v, i);
        } else {
            v = json_object_get(v, part);
        }
    }
    free(copy);
    return v;
}

static void print_value(json_t *v, int count_it)
{
    if (count_it) {
        printf("%zu\n", json_is_array(v) ? json_array_size(v)
                                         : json_object_size(v));
    } else if (json_is_string(v)) {
        printf("%s\n", json_string_value(v));
    } else if (json_is_integer(v)) {
        printf("%lld\n", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        printf("%.17g\n", json_real_value(v));
    } else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("%s\n", text ? text : "?");
        free(text);
    }
}

int main(int argc, char **argv)
{
    json_error_t error;
    int rc = 0, docs = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: json_get PATH < documents\n");
        return 2;
    }
    for (;;) {
        json_t *doc = json_loadf(stdin, JSON_DISABLE_EOF_CHECK, &error), *v;
        int count_it;
        if (!doc) {
            /* the end of the input, or a broken document */
            int c;
            while ((c = getchar()) == ' ' || c == '\n' || c == '\t' ||
                   c == '\r')
                ;
            if (c != EOF || docs == 0) {
                fprintf(stderr, "json_get: not JSON: %s (line %d)\n",
                        error.text, error.line);
                rc = 1;
            }
            break;
        }
        docs++;
        v = strcmp(argv[1], ".") ? walk(doc, argv[1], &count_it) : doc;
        if (!strcmp(argv[1], "."))
            count_it = 0;
        if (v && (!count_it || json_is_array(v) || json_is_object(v))) {
            print_value(v, count_it);
        } else {
            printf("MISSING\n");
            rc = 1;
        }
        json_decref(doc);
    }
    return rc;
}
