/*
 * job_config.c - parse and validate the job config (mpikvs.json) with jansson.
 *
 * Validation goes on after the first problem, so a user fixes a file in
 * one round: every problem becomes one line "source: path: message".
 * Paths are written the way a user would point at the value:
 * tables.chemistry.key.fields[3].digits.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_config.h"
#include "errors_internal.h"
#include "near_key.h"
#include "round.h"
#include "size.h"

#define PATH_MAX_LEN      256
#define MAX_FIELDS        1024u
#define DEFAULT_TIER_SHARE 0.25
#define DEFAULT_NEAR_SHARE 0.25

struct ctx {
    const char        *source;
    struct kvshm_diag *diag;
    bool               failed;
    bool               oom;
};

/* ---- problems ---- */

static void diag_append(struct kvshm_diag *diag, const char *line)
{
    size_t old = diag->text ? strlen(diag->text) : 0, add = strlen(line);
    char *text = realloc(diag->text, old + add + 2);

    if (!text)
        return;
    memcpy(text + old, line, add);
    text[old + add] = '\n';
    text[old + add + 1] = '\0';
    diag->text = text;
}

static void diag_add(struct kvshm_diag *diag, const char *line)
{
    if (diag->count == KVSHM_CONFIG_MAX_ERRORS) {
        if (!diag->truncated)
            diag_append(diag, "(further problems not shown)");
        diag->truncated = true;
        return;
    }
    diag_append(diag, line);
    diag->count++;
}

static void problem(struct ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(struct ctx *c, const char *path, const char *fmt, ...)
{
    char msg[400], line[800];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (path && *path)
        snprintf(line, sizeof(line), "%s: %s: %s", c->source, path, msg);
    else
        snprintf(line, sizeof(line), "%s: %s", c->source, msg);
    c->failed = true;
    if (c->diag)
        diag_add(c->diag, line);
}

/* A JSON value as it appears in the file, shortened for a message. */
static const char *shown(const json_t *v, char *buf, size_t len)
{
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT |
                                   JSON_REAL_PRECISION(15));

    if (!text) {
        snprintf(buf, len, "(value)");
        return buf;
    }
    if (strlen(text) >= len && len > 4)
        snprintf(buf, len, "%.*s...", (int)(len - 4), text);
    else
        snprintf(buf, len, "%s", text);
    free(text);
    return buf;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:  return "an object";
    case JSON_ARRAY:   return "an array";
    case JSON_STRING:  return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL:    return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:   return "a boolean";
    default:           return "null";
    }
}

static void wrong_type(struct ctx *c, const char *path, const json_t *v,
                       const char *expected)
{
    char buf[80];
    problem(c, path, "%s is %s, expected %s", shown(v, buf, sizeof(buf)),
            type_name(v), expected);
}

/* A path too deep for the buffer ends in "...": still a fine pointer. */
static void mark_cut(char *out, int n)
{
    if (n >= (int)PATH_MAX_LEN)
        memcpy(out + PATH_MAX_LEN - 4, "...", 4);
}

static void join(char *out, const char *path, const char *key)
{
    mark_cut(out, snprintf(out, PATH_MAX_LEN, "%s%s%s", path,
                           *path ? "." : "", key));
}

static void join_index(char *out, const char *path, size_t i)
{
    mark_cut(out, snprintf(out, PATH_MAX_LEN, "%s[%zu]", path, i));
}

/* Every key of obj must be one of allowed (a NULL-terminated list). */
static void only_keys(struct ctx *c, const char *path, json_t *obj,
                      const char *const *allowed)
{
    const char *key;
    json_t *v;

    json_object_foreach(obj, key, v) {
        bool ok = false;
        char list[256] = "", sub[PATH_MAX_LEN];
        for (const char *const *a = allowed; *a; a++) {
            ok |= strcmp(key, *a) == 0;
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                     a == allowed ? "" : ", ", *a);
        }
        if (!ok) {
            join(sub, path, key);
            problem(c, sub, "unknown key (expected one of: %s)", list);
        }
    }
}

/* ---- scalars ---- */

static bool get_uint(struct ctx *c, const char *path, json_t *v, uint64_t min,
                     uint64_t max, uint64_t *out)
{
    char buf[80];

    if (!json_is_integer(v)) {
        wrong_type(c, path, v, "an integer");
        return false;
    }
    json_int_t n = json_integer_value(v);
    if (n < 0 || (uint64_t)n < min || (uint64_t)n > max) {
        problem(c, path, "%s is out of range %llu..%llu",
                shown(v, buf, sizeof(buf)), (unsigned long long)min,
                (unsigned long long)max);
        return false;
    }
    *out = (uint64_t)n;
    return true;
}

static bool get_nonnegative(struct ctx *c, const char *path, json_t *v,
                            double *out)
{
    char buf[80];

    if (!json_is_number(v)) {
        wrong_type(c, path, v, "a number");
        return false;
    }
    double d = json_number_value(v);
    if (!(d >= 0.0) || !isfinite(d)) {
        problem(c, path, "%s must be 0 or more", shown(v, buf, sizeof(buf)));
        return false;
    }
    *out = d;
    return true;
}

/* A fraction of 0 to 1, both included (a table's verify). */
static void get_fraction01(struct ctx *c, const char *path, json_t *v,
                           double *out)
{
    char buf[80];

    if (!json_is_number(v)) {
        wrong_type(c, path, v, "a number from 0 to 1");
        return;
    }
    double d = json_number_value(v);
    if (!(d >= 0.0 && d <= 1.0)) {
        problem(c, path, "%s is out of range: a fraction from 0 to 1",
                shown(v, buf, sizeof(buf)));
        return;
    }
    *out = d;
}

/* One of the names in t (names.h); returns its index or -1. */
static int get_enum(struct ctx *c, const char *path, json_t *v,
                    const struct kvshm_names *t)
{
    char list[128];
    unsigned i;

    if (!json_is_string(v)) {
        wrong_type(c, path, v, "a string");
        return -1;
    }
    if (kvshm_names_parse(t, json_string_value(v), &i) == MPIKVS_OK)
        return (int)i;
    problem(c, path, "'%s' is not one of: %s", json_string_value(v),
            kvshm_names_list(t, list, sizeof(list)));
    return -1;
}

/*
 * A size: a string ("512M", "25%"), an integer (bytes) or a real number
 * (a fraction of the whole, 0 < f <= 1).
 */
static bool get_share(struct ctx *c, const char *path, json_t *v,
                      struct kvshm_share *out)
{
    mpikvs_error_t err;
    char buf[80];

    memset(out, 0, sizeof(*out));
    if (json_is_string(v)) {
        if (kvshm_parse_share(json_string_value(v), path, &out->bytes,
                              &out->fraction, &err) == MPIKVS_OK)
            return true;
        /* err names the path already */
        problem(c, NULL, "%s", err.text);
        return false;
    }
    if (json_is_integer(v)) {
        if (json_integer_value(v) >= 1) {
            out->bytes = (uint64_t)json_integer_value(v);
            return true;
        }
        problem(c, path, "%s bytes makes no sense (a fraction is written "
                         "as a real number, e.g. 0.5)",
                shown(v, buf, sizeof(buf)));
        return false;
    }
    if (json_is_real(v)) {
        double f = json_real_value(v);
        if (f > 0.0 && f <= 1.0) {
            out->fraction = f;
            return true;
        }
        problem(c, path, "%s is out of range: a fraction is more than 0 and "
                         "at most 1%s",
                shown(v, buf, sizeof(buf)),
                f > 1.0 ? " (write bytes as an integer or a string such as "
                          "\"1G\")"
                        : "");
        return false;
    }
    wrong_type(c, path, v, "a size such as \"512M\" or \"25%\", or a "
                           "fraction such as 0.5");
    return false;
}

/* ---- layouts ---- */

/* The limit of a key or a value (job_config.h), and what it limits. */
static uint32_t record_max(bool is_key)
{
    return is_key ? KVSHM_KEY_SIZE_MAX : KVSHM_VALUE_SIZE_MAX;
}

static const char *record_noun(bool is_key)
{
    return is_key ? "key" : "value";
}

static bool parse_type(const char *s, uint32_t max,
                       enum kvshm_field_type *type, uint32_t *bytes)
{
    unsigned long n;
    char *end;

    if (strcmp(s, "double") == 0) {
        *type = KVSHM_FIELD_DOUBLE;
        return true;
    }
    if (strcmp(s, "int64") == 0) {
        *type = KVSHM_FIELD_INT64;
        return true;
    }
    if (strncmp(s, "bytes[", 6) != 0 || s[6] < '1' || s[6] > '9')
        return false;
    n = strtoul(s + 6, &end, 10);
    if (strcmp(end, "]") != 0 || n < 1 || n > max)
        return false;
    *type = KVSHM_FIELD_BYTES;
    *bytes = (uint32_t)n;
    return true;
}

static bool field_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= KVSHM_FIELD_NAME_MAX)
        return false;
    for (; *s; s++)
        if (*s <= ' ' || *s > '~' || *s == '=' || *s == '"' || *s == '\\')
            return false;
    return true;
}

struct layout_rules {
    bool     is_key;
    bool     default_given;    /* even if it was wrong: no second complaint */
    uint32_t default_digits;   /* 0: none valid */
    double   zero_below;
};

static void parse_field(struct ctx *c, const char *path, json_t *v,
                        const struct layout_rules *rules,
                        struct kvshm_field *f)
{
    static const char *const key_keys[] = {"name", "type", "digits",
                                           "zero_below", NULL};
    static const char *const value_keys[] = {"name", "type", NULL};
    char sub[PATH_MAX_LEN], buf[80];
    json_t *name, *type, *digits, *zero;
    uint64_t n;

    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object with name and type");
        return;
    }
    only_keys(c, path, v, rules->is_key ? key_keys : value_keys);
    name = json_object_get(v, "name");
    type = json_object_get(v, "type");
    digits = json_object_get(v, "digits");
    zero = json_object_get(v, "zero_below");

    join(sub, path, "name");
    if (!name)
        problem(c, sub, "missing");
    else if (!json_is_string(name))
        wrong_type(c, sub, name, "a string");
    else if (!field_name_ok(json_string_value(name)))
        problem(c, sub, "%s is not a field name (1 to %u printable "
                        "characters, no spaces, quotes, backslashes or '=')",
                shown(name, buf, sizeof(buf)), KVSHM_FIELD_NAME_MAX - 1);
    else
        snprintf(f->name, sizeof(f->name), "%s", json_string_value(name));

    join(sub, path, "type");
    if (!type)
        problem(c, sub, "missing (double, int64 or bytes[N])");
    else if (!json_is_string(type))
        wrong_type(c, sub, type, "a string");
    else if (!parse_type(json_string_value(type), record_max(rules->is_key),
                         &f->type, &f->bytes))
        problem(c, sub, "'%s' is not a type (double, int64 or bytes[N] "
                        "with N from 1 to %u, the largest %s)",
                json_string_value(type), record_max(rules->is_key),
                record_noun(rules->is_key));

    if (!rules->is_key || f->type != KVSHM_FIELD_DOUBLE) {
        if (rules->is_key && f->type && digits) {
            join(sub, path, "digits");
            problem(c, sub, "only double fields are rounded");
        }
        if (rules->is_key && f->type && zero) {
            join(sub, path, "zero_below");
            problem(c, sub, "only double fields are rounded");
        }
    } else {
        join(sub, path, "digits");
        if (digits) {
            if (get_uint(c, sub, digits, KVSHM_DIGITS_MIN, KVSHM_DIGITS_MAX,
                         &n))
                f->digits = (uint32_t)n;
        } else if (rules->default_given) {
            f->digits = rules->default_digits;
        } else {
            problem(c, sub, "missing (give digits here, or default_digits "
                            "for the whole key)");
        }
        f->zero_below = rules->zero_below;
        join(sub, path, "zero_below");
        if (zero)
            get_nonnegative(c, sub, zero, &f->zero_below);
    }

    switch (f->type) {
    case KVSHM_FIELD_DOUBLE:
        f->width = rules->is_key ? kvshm_double_width(f->digits ? f->digits
                                                                : 1)
                                 : 8u;
        break;
    case KVSHM_FIELD_INT64:
        f->width = 8;
        break;
    case KVSHM_FIELD_BYTES:
        f->width = f->bytes;
        break;
    }
}

static void parse_layout(struct ctx *c, const char *path, json_t *v,
                         bool is_key, struct kvshm_record *out)
{
    static const char *const key_keys[] = {"key_size", "fields",
                                           "default_digits", "zero_below",
                                           NULL};
    static const char *const value_keys[] = {"value_size", "fields", NULL};
    const char *size_key = is_key ? "key_size" : "value_size";
    struct layout_rules rules = {.is_key = is_key};
    char sub[PATH_MAX_LEN], buf[80];
    json_t *size, *fields, *dd, *zb;
    uint64_t n, given = 0;

    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object");
        return;
    }
    only_keys(c, path, v, is_key ? key_keys : value_keys);
    size = json_object_get(v, size_key);
    fields = json_object_get(v, "fields");
    if (is_key) {
        dd = json_object_get(v, "default_digits");
        zb = json_object_get(v, "zero_below");
        join(sub, path, "default_digits");
        rules.default_given = dd != NULL;
        if (dd && get_uint(c, sub, dd, KVSHM_DIGITS_MIN, KVSHM_DIGITS_MAX,
                           &n))
            rules.default_digits = (uint32_t)n;
        join(sub, path, "zero_below");
        if (zb)
            get_nonnegative(c, sub, zb, &rules.zero_below);
    }

    join(sub, path, size_key);
    if (size && json_is_integer(size) &&
        json_integer_value(size) > (json_int_t)record_max(is_key))
        problem(c, sub, "%s is more than the largest %s, %u bytes",
                shown(size, buf, sizeof(buf)), record_noun(is_key),
                record_max(is_key));
    else if (size && get_uint(c, sub, size, 1, record_max(is_key), &n))
        given = n;
    if (!size && !fields) {
        problem(c, path, "give %s or fields", size_key);
        return;
    }
    if (!fields) {
        if (is_key && (json_object_get(v, "default_digits") ||
                       json_object_get(v, "zero_below")))
            problem(c, path, "default_digits and zero_below apply to "
                             "fields, and this key has none");
        out->size = given;
        return;
    }

    join(sub, path, "fields");
    if (!json_is_array(fields) || json_array_size(fields) == 0 ||
        json_array_size(fields) > MAX_FIELDS) {
        if (!json_is_array(fields))
            wrong_type(c, sub, fields, "an array of fields");
        else
            problem(c, sub, "has %zu fields, expected 1 to %u",
                    json_array_size(fields), MAX_FIELDS);
        return;
    }
    out->nfields = json_array_size(fields);
    out->fields = calloc(out->nfields, sizeof(*out->fields));
    if (!out->fields) {
        c->oom = c->failed = true;
        out->nfields = 0;
        return;
    }
    size_t offset = 0;
    for (size_t i = 0; i < out->nfields; i++) {
        struct kvshm_field *f = &out->fields[i];
        char fpath[PATH_MAX_LEN];

        join_index(fpath, sub, i);
        parse_field(c, fpath, json_array_get(fields, i), &rules, f);
        for (size_t j = 0; j < i && f->name[0]; j++)
            if (strcmp(out->fields[j].name, f->name) == 0) {
                char npath[PATH_MAX_LEN];
                join(npath, fpath, "name");
                problem(c, npath, "'%s' is used twice (also %s[%zu])",
                        f->name, sub, j);
                break;
            }
        f->offset = (uint32_t)offset;
        offset += f->width;
    }
    out->size = offset;
    join(sub, path, size_key);
    if (offset > record_max(is_key))
        problem(c, path, "the fields take %zu bytes, more than the largest "
                         "%s, %u bytes",
                offset, record_noun(is_key), record_max(is_key));
    else if (size && given && given != offset)
        problem(c, sub, "%s contradicts the fields, which take %zu bytes",
                shown(size, buf, sizeof(buf)), offset);
}

/* ---- tables ---- */

static bool table_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= KVSHM_TABLE_NAME_MAX)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
            return false;
    return true;
}

static void parse_tier(struct ctx *c, const char *path, json_t *v,
                       struct kvshm_table_config *t)
{
    static const char *const keys[] = {"enabled", "size", "caching", NULL};
    char sub[PATH_MAX_LEN];
    json_t *x;
    int i;

    t->tier.caching = KVSHM_CACHING_ALWAYS;
    t->counters = KVSHM_COUNTERS_DEFAULT;
    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object");
        return;
    }
    only_keys(c, path, v, keys);
    join(sub, path, "enabled");
    if ((x = json_object_get(v, "enabled"))) {
        if (json_is_boolean(x))
            t->tier.enabled = json_is_true(x);
        else
            wrong_type(c, sub, x, "true or false");
    }
    join(sub, path, "size");
    if ((x = json_object_get(v, "size")))
        get_share(c, sub, x, &t->tier.size);
    join(sub, path, "caching");
    if ((x = json_object_get(v, "caching")) &&
        (i = get_enum(c, sub, x, &kvshm_caching_names)) >= 0)
        t->tier.caching = (enum kvshm_caching)i;
    if (t->tier.enabled && !t->tier.size.bytes && !t->tier.size.fraction)
        t->tier.size.fraction = DEFAULT_TIER_SHARE;
}

/* ---- neighbourhoods ---- */

/* The key field of that name, or NULL. */
static const struct kvshm_field *key_field(const struct kvshm_record *key,
                                           const char *name, size_t *index)
{
    for (size_t i = 0; key->fields && i < key->nfields; i++)
        if (strcmp(key->fields[i].name, name) == 0) {
            *index = i;
            return &key->fields[i];
        }
    return NULL;
}

/* "Ca, pH, T": the key's field names, for a message. */
static const char *field_list(const struct kvshm_record *key, char *buf,
                              size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < key->nfields && strlen(buf) + 1 < len; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "",
                 key->fields[i].name);
    return buf;
}

/* near.digits: each named double field's digits in the coarse key into
 * digits[] (0: not given).  False if something was wrong. */
static bool parse_near_digits(struct ctx *c, const char *path, json_t *v,
                              const struct kvshm_record *key,
                              uint32_t *digits)
{
    char sub[PATH_MAX_LEN], list[256];
    const char *name;
    json_t *x;
    bool ok = true;

    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object of key field names and digits, "
                               "such as {\"Ca\": 3}");
        return false;
    }
    json_object_foreach(v, name, x) {
        const struct kvshm_field *f;
        size_t i;
        uint64_t n;

        join(sub, path, name);
        if (!(f = key_field(key, name, &i))) {
            problem(c, sub, "the key has no field '%s' (its fields: %s)",
                    name, field_list(key, list, sizeof(list)));
            ok = false;
        } else if (f->type != KVSHM_FIELD_DOUBLE) {
            problem(c, sub, "'%s' is %s: only double fields are rounded, "
                            "and so coarsened",
                    name, f->type == KVSHM_FIELD_INT64 ? "int64" : "bytes");
            ok = false;
        } else if (get_uint(c, sub, x, KVSHM_DIGITS_MIN, f->digits, &n)) {
            digits[i] = (uint32_t)n;
        } else {
            ok = false;
        }
    }
    return ok;
}

/*
 * The coarse key of a table's neighbourhoods (near_key.h): each double
 * field with its digits from "digits", else the key's less "coarser"
 * (given, or 1 without "digits"); other fields as they are.
 */
static void resolve_near_key(struct ctx *c, const char *path,
                             struct kvshm_table_config *t, uint32_t coarser,
                             bool coarser_given, const uint32_t *digits)
{
    const struct kvshm_record *key = &t->key;
    struct kvshm_record *out = &t->near.key;
    char sub[PATH_MAX_LEN];
    bool coarsened = false, doubles = false, ok = true;

    join(sub, path, "coarser");
    for (size_t i = 0; i < key->nfields; i++) {
        const struct kvshm_field *f = &key->fields[i];
        if (f->type != KVSHM_FIELD_DOUBLE)
            continue;
        doubles = true;
        if (!digits[i] && f->digits <= coarser) {
            problem(c, coarser_given ? sub : path,
                    "%s%u%s leaves key field '%s' (%u digit%s) with no digit "
                    "(give it at least 1 in digits)",
                    coarser_given ? "" : "coarser, ", coarser,
                    coarser_given ? "" : " by default,", f->name, f->digits,
                    f->digits == 1 ? "" : "s");
            ok = false;
        }
        coarsened |= digits[i] ? digits[i] < f->digits : coarser > 0;
    }
    if (!doubles) {
        problem(c, path, "the key has no double field: nothing to make "
                         "coarser (int64 and bytes fields are kept)");
        return;
    }
    if (!coarsened) {
        problem(c, path, "not coarser than the key: no field loses a digit "
                         "(give coarser, or digits fewer than the key's)");
        return;
    }
    if (!ok)
        return;
    out->fields = calloc(key->nfields, sizeof(*out->fields));
    if (!out->fields) {
        c->oom = c->failed = true;
        return;
    }
    out->nfields = key->nfields;
    for (size_t i = 0; i < key->nfields; i++) {
        struct kvshm_field *f = &out->fields[i];
        *f = key->fields[i];
        if (f->type == KVSHM_FIELD_DOUBLE)
            f->digits = digits[i] ? digits[i] : f->digits - coarser;
    }
    kvshm_key_layout(out);
}

static void parse_near(struct ctx *c, const char *path, json_t *v,
                       struct kvshm_table_config *t)
{
    static const char *const keys[] = {"coarser", "digits", "members",
                                       "size", NULL};
    char sub[PATH_MAX_LEN];
    uint32_t *digits = NULL, coarser = 1;
    bool digits_ok = true, coarser_ok = true;
    json_t *x, *jd;
    uint64_t n = 0;

    t->near.enabled = true;
    t->near.members = KVSHM_NEAR_MEMBERS_DEFAULT;
    t->near.size.fraction = DEFAULT_NEAR_SHARE;
    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object (coarser, digits, members, size)");
        return;
    }
    only_keys(c, path, v, keys);
    join(sub, path, "members");
    if ((x = json_object_get(v, "members")) &&
        get_uint(c, sub, x, 1, KVSHM_SLOTS_MAX, &n))
        t->near.members = (uint32_t)n;
    join(sub, path, "size");
    if ((x = json_object_get(v, "size")))
        get_share(c, sub, x, &t->near.size);

    /* the coarse key: only of a key of valid fields */
    if (!t->key.fields) {
        if (t->key.size)
            problem(c, path, "the key is %zu raw bytes: a neighbourhood "
                             "needs key fields to make coarser",
                    t->key.size);
        return;
    }
    for (size_t i = 0; i < t->key.nfields; i++)
        if (t->key.fields[i].type == KVSHM_FIELD_DOUBLE &&
            !t->key.fields[i].digits)
            return;   /* the key's own problem is reported */
    digits = calloc(t->key.nfields, sizeof(*digits));
    if (!digits) {
        c->oom = c->failed = true;
        return;
    }
    jd = json_object_get(v, "digits");
    join(sub, path, "digits");
    if (jd)
        digits_ok = parse_near_digits(c, sub, jd, &t->key, digits);
    join(sub, path, "coarser");
    if ((x = json_object_get(v, "coarser"))) {
        coarser_ok = get_uint(c, sub, x, 1, KVSHM_DIGITS_MAX, &n);
        coarser = (uint32_t)n;
    } else if (jd)
        coarser = 0;   /* with digits, the fields not named keep theirs */
    if (digits_ok && coarser_ok)
        resolve_near_key(c, path, t, coarser, x != NULL, digits);
    free(digits);
}

/* A file path of persist: absolute, so that it means the same on every
 * node and to the plugin at submission. */
static void get_persist_path(struct ctx *c, const char *path, json_t *v,
                             char *out)
{
    const char *s;

    if (!json_is_string(v)) {
        wrong_type(c, path, v, "a string");
        return;
    }
    s = json_string_value(v);
    if (s[0] != '/')
        problem(c, path, "'%s' is not an absolute path (give the file's "
                         "full path, on a file system every node shares)",
                s);
    else if (strlen(s) >= KVSHM_PERSIST_PATH_MAX)
        problem(c, path, "the path is longer than %u bytes",
                KVSHM_PERSIST_PATH_MAX - 1);
    else
        snprintf(out, KVSHM_PERSIST_PATH_MAX, "%s", s);
}

static void parse_persist(struct ctx *c, const char *path, json_t *v,
                          struct kvshm_table_config *t)
{
    static const char *const keys[] = {"load", "save", NULL};
    char sub[PATH_MAX_LEN];
    json_t *x;

    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object");
        return;
    }
    only_keys(c, path, v, keys);
    join(sub, path, "load");
    if ((x = json_object_get(v, "load")))
        get_persist_path(c, sub, x, t->persist.load);
    join(sub, path, "save");
    if ((x = json_object_get(v, "save")))
        get_persist_path(c, sub, x, t->persist.save);
}

static void parse_table(struct ctx *c, const char *path, const char *name,
                        json_t *v, struct kvshm_table_config *t)
{
    static const char *const keys[] = {"size", "key", "value",
                                       "slots_per_bucket", "mode",
                                       "transport", "far_read", "tier",
                                       "counters", "persist",
                                       "near", "verify",
                                       NULL};
    char sub[PATH_MAX_LEN];
    json_t *x;
    uint64_t n;
    int i;

    if (!table_name_ok(name))
        problem(c, path, "'%s' is not a table name (1 to %u characters of "
                         "A-Z a-z 0-9 _ -)",
                name, KVSHM_TABLE_NAME_MAX - 1);
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->slots_per_bucket = KVSHM_SLOTS_DEFAULT;
    t->mode = KVSHM_MODE_LOCKFREE;
    t->transport = KVSHM_TRANSPORT_AUTO;
    t->far_read = KVSHM_FAR_READ_AUTO;
    t->tier.caching = KVSHM_CACHING_ALWAYS;
    t->counters = KVSHM_COUNTERS_DEFAULT;
    if (!json_is_object(v)) {
        wrong_type(c, path, v, "an object");
        return;
    }
    only_keys(c, path, v, keys);

    join(sub, path, "size");
    if ((x = json_object_get(v, "size")))
        get_share(c, sub, x, &t->size);
    join(sub, path, "key");
    if ((x = json_object_get(v, "key")))
        parse_layout(c, sub, x, true, &t->key);
    else
        problem(c, sub, "missing (give key_size or fields)");
    join(sub, path, "value");
    if ((x = json_object_get(v, "value")))
        parse_layout(c, sub, x, false, &t->value);
    else
        problem(c, sub, "missing (give value_size or fields)");
    join(sub, path, "slots_per_bucket");
    if ((x = json_object_get(v, "slots_per_bucket")) &&
        get_uint(c, sub, x, 1, KVSHM_SLOTS_MAX, &n))
        t->slots_per_bucket = (uint32_t)n;
    join(sub, path, "mode");
    if ((x = json_object_get(v, "mode")) &&
        (i = get_enum(c, sub, x, &kvshm_mode_names)) >= 0)
        t->mode = (enum kvshm_mode)i;
    join(sub, path, "transport");
    if ((x = json_object_get(v, "transport")) &&
        (i = get_enum(c, sub, x, &kvshm_transport_names)) >= 0)
        t->transport = (enum kvshm_transport)i;
    join(sub, path, "far_read");
    if ((x = json_object_get(v, "far_read")) &&
        (i = get_enum(c, sub, x, &kvshm_far_read_names)) >= 0)
        t->far_read = (enum kvshm_far_read)i;
    join(sub, path, "tier");
    if ((x = json_object_get(v, "tier")))
        parse_tier(c, sub, x, t);
    join(sub, path, "counters");
    if ((x = json_object_get(v, "counters")) &&
        get_uint(c, sub, x, 0, KVSHM_COUNTERS_MAX, &n))
        t->counters = (uint32_t)n;
    join(sub, path, "verify");
    if ((x = json_object_get(v, "verify")))
        get_fraction01(c, sub, x, &t->verify);
    join(sub, path, "persist");
    if ((x = json_object_get(v, "persist")))
        parse_persist(c, sub, x, t);
    join(sub, path, "near");
    if ((x = json_object_get(v, "near")))
        parse_near(c, sub, x, t);
}

/* What can be said of the sizes before the node's size is known. */
static void check_fractions(struct ctx *c, const struct kvshm_config *cfg)
{
    double sum = 0;

    for (size_t i = 0; i < cfg->ntables; i++)
        sum += cfg->tables[i].size.fraction;
    /* a little slack for shares written as thirds */
    if (sum > 1.0 + 1e-9) {
        problem(c, "tables", "the size shares add up to %.4g%%, more than "
                             "the whole",
                sum * 100.0);
        return;
    }
    for (size_t i = 0; sum >= 1.0 - 1e-9 && i < cfg->ntables; i++)
        if (!kvshm_share_given(&cfg->tables[i].size)) {
            char path[PATH_MAX_LEN];
            mark_cut(path, snprintf(path, sizeof(path), "tables.%s",
                                    cfg->tables[i].name));
            problem(c, path, "has no size, and the other tables' shares "
                             "leave nothing for it");
        }
}

static void parse_root(struct ctx *c, json_t *root, struct kvshm_config *cfg)
{
    static const char *const keys[] = {"version", "tables", NULL};
    json_t *version, *tables, *v;
    const char *name;
    size_t i = 0;

    if (!json_is_object(root)) {
        wrong_type(c, "(top)", root, "an object with version and tables");
        return;
    }
    only_keys(c, "", root, keys);
    version = json_object_get(root, "version");
    if (!version)
        problem(c, "version", "missing (this mpikvs reads version %d)",
                KVSHM_CONFIG_VERSION);
    else if (!json_is_integer(version))
        wrong_type(c, "version", version, "an integer");
    else if (json_integer_value(version) != KVSHM_CONFIG_VERSION)
        problem(c, "version", "%lld is not supported (this mpikvs reads "
                              "version %d)",
                (long long)json_integer_value(version), KVSHM_CONFIG_VERSION);
    else
        cfg->version = KVSHM_CONFIG_VERSION;

    tables = json_object_get(root, "tables");
    if (!tables) {
        problem(c, "tables", "missing (at least one table)");
        return;
    }
    if (!json_is_object(tables) || json_object_size(tables) == 0) {
        if (json_is_object(tables))
            problem(c, "tables", "no table in it (at least one is needed)");
        else
            wrong_type(c, "tables", tables, "an object of named tables");
        return;
    }
    cfg->tables = calloc(json_object_size(tables), sizeof(*cfg->tables));
    if (!cfg->tables) {
        c->oom = c->failed = true;
        return;
    }
    json_object_foreach(tables, name, v) {
        char path[PATH_MAX_LEN];
        mark_cut(path, snprintf(path, sizeof(path), "tables.%s", name));
        parse_table(c, path, name, v, &cfg->tables[i++]);
        cfg->ntables = i;
    }
    check_fractions(c, cfg);
}

/* ---- public ---- */

int kvshm_config_parse(const char *text, size_t len, const char *source,
                       struct kvshm_config **out, struct kvshm_diag *diag)
{
    struct ctx c = {.source = source ? source : "config", .diag = diag};
    struct kvshm_config *cfg;
    json_error_t jerr;
    json_t *root;

    *out = NULL;
    if (diag)
        memset(diag, 0, sizeof(*diag));
    if (len > KVSHM_CONFIG_MAX_BYTES) {
        problem(&c, NULL, "%zu bytes is too large for a config (at most %u)",
                len, KVSHM_CONFIG_MAX_BYTES);
        return MPIKVS_ERR_INVAL;
    }
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        problem(&c, NULL, "line %d, column %d: invalid JSON: %s", jerr.line,
                jerr.column, jerr.text);
        return MPIKVS_ERR_INVAL;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (!cfg) {
        json_decref(root);
        return -ENOMEM;
    }
    snprintf(cfg->source, sizeof(cfg->source), "%s", c.source);
    parse_root(&c, root, cfg);
    json_decref(root);
    if (c.failed) {
        kvshm_config_free(cfg);
        return c.oom ? -ENOMEM : MPIKVS_ERR_INVAL;
    }
    *out = cfg;
    return MPIKVS_OK;
}

int kvshm_config_load(const char *path, struct kvshm_config **out,
                      struct kvshm_diag *diag)
{
    struct ctx c = {.source = path, .diag = diag};
    char *text = NULL;
    size_t len = 0, cap = 0;
    FILE *f;
    int rc;

    *out = NULL;
    if (diag)
        memset(diag, 0, sizeof(*diag));
    f = fopen(path, "r");
    if (!f) {
        problem(&c, NULL, "cannot read: %s", strerror(errno));
        return MPIKVS_ERR_INVAL;
    }
    for (;;) {
        if (len == cap) {
            char *more;
            cap = cap ? cap * 2 : 16384;
            if (cap > KVSHM_CONFIG_MAX_BYTES + 1)
                cap = KVSHM_CONFIG_MAX_BYTES + 1;
            if (len == cap) {
                problem(&c, NULL, "larger than %u bytes: not a config",
                        KVSHM_CONFIG_MAX_BYTES);
                fclose(f);
                free(text);
                return MPIKVS_ERR_INVAL;
            }
            more = realloc(text, cap);
            if (!more) {
                fclose(f);
                free(text);
                return -ENOMEM;
            }
            text = more;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        problem(&c, NULL, "cannot read: %s", strerror(errno));
        fclose(f);
        free(text);
        return MPIKVS_ERR_INVAL;
    }
    fclose(f);
    rc = kvshm_config_parse(text ? text : "", len, path, out, diag);
    free(text);
    return rc;
}

void kvshm_diag_line(struct kvshm_diag *diag, const char *line)
{
    if (diag)
        diag_add(diag, line);
}

static json_t *share_json(const struct kvshm_share *s)
{
    if (s->bytes)
        return json_integer((json_int_t)s->bytes);
    return json_real(s->fraction);
}

static json_t *layout_json(const struct kvshm_record *l, bool is_key)
{
    json_t *o = json_object(), *fields;

    if (!o)
        return NULL;
    if (l->fields) {
        fields = json_array();
        for (size_t i = 0; fields && i < l->nfields; i++) {
            const struct kvshm_field *f = &l->fields[i];
            char type[32];
            json_t *jf = json_object();
            if (f->type == KVSHM_FIELD_BYTES)
                snprintf(type, sizeof(type), "bytes[%u]", f->bytes);
            else
                snprintf(type, sizeof(type), "%s",
                         f->type == KVSHM_FIELD_DOUBLE ? "double" : "int64");
            json_object_set_new(jf, "name", json_string(f->name));
            json_object_set_new(jf, "type", json_string(type));
            if (is_key && f->type == KVSHM_FIELD_DOUBLE) {
                json_object_set_new(jf, "digits", json_integer(f->digits));
                json_object_set_new(jf, "zero_below",
                                    json_real(f->zero_below));
            }
            json_array_append_new(fields, jf);
        }
        json_object_set_new(o, "fields", fields);
    }
    json_object_set_new(o, is_key ? "key_size" : "value_size",
                        json_integer((json_int_t)l->size));
    return o;
}

/* Each double field's digits spelled out: parsing it gives the same
 * coarse key, whatever "coarser" made it. */
static json_t *near_json(const struct kvshm_table_config *t)
{
    json_t *o = json_object(), *digits = json_object();

    json_object_set_new(o, "members", json_integer(t->near.members));
    json_object_set_new(o, "size", share_json(&t->near.size));
    for (size_t i = 0; t->near.key.fields && i < t->near.key.nfields; i++) {
        const struct kvshm_field *f = &t->near.key.fields[i];
        if (f->type == KVSHM_FIELD_DOUBLE)
            json_object_set_new(digits, f->name, json_integer(f->digits));
    }
    json_object_set_new(o, "digits", digits);
    return o;
}

char *kvshm_config_dump(const struct kvshm_config *cfg)
{
    json_t *root = json_object(), *tables = json_object();
    char *text;

    if (!root || !tables) {
        json_decref(root);
        json_decref(tables);
        return NULL;
    }
    json_object_set_new(root, "version", json_integer(cfg->version));
    for (size_t i = 0; i < cfg->ntables; i++) {
        const struct kvshm_table_config *t = &cfg->tables[i];
        json_t *jt = json_object(), *tier = json_object();
        if (t->size.bytes || t->size.fraction > 0)
            json_object_set_new(jt, "size", share_json(&t->size));
        json_object_set_new(jt, "key", layout_json(&t->key, true));
        json_object_set_new(jt, "value", layout_json(&t->value, false));
        json_object_set_new(jt, "slots_per_bucket",
                            json_integer(t->slots_per_bucket));
        json_object_set_new(jt, "mode", json_string(kvshm_mode_name(t->mode)));
        json_object_set_new(jt, "transport",
                            json_string(kvshm_transport_name(t->transport)));
        json_object_set_new(jt, "far_read",
                            json_string(kvshm_far_read_name(t->far_read)));
        json_object_set_new(tier, "enabled", json_boolean(t->tier.enabled));
        if (t->tier.size.bytes || t->tier.size.fraction > 0)
            json_object_set_new(tier, "size", share_json(&t->tier.size));
        json_object_set_new(tier, "caching",
                            json_string(kvshm_caching_name(t->tier.caching)));
        json_object_set_new(jt, "tier", tier);
        /* only where given: older configs dump as they did */
        if (t->counters != KVSHM_COUNTERS_DEFAULT)
            json_object_set_new(jt, "counters", json_integer(t->counters));
        if (t->verify > 0)
            json_object_set_new(jt, "verify", json_real(t->verify));
        if (t->persist.load[0] || t->persist.save[0]) {
            json_t *p = json_object();
            if (t->persist.load[0])
                json_object_set_new(p, "load", json_string(t->persist.load));
            if (t->persist.save[0])
                json_object_set_new(p, "save", json_string(t->persist.save));
            json_object_set_new(jt, "persist", p);
        }
        if (t->near.enabled)
            json_object_set_new(jt, "near", near_json(t));
        json_object_set_new(tables, t->name, jt);
    }
    json_object_set_new(root, "tables", tables);
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                JSON_REAL_PRECISION(17));
    json_decref(root);
    return text;
}

const struct kvshm_table_config *kvshm_config_table(
    const struct kvshm_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && i < cfg->ntables; i++)
        if (strcmp(cfg->tables[i].name, name) == 0)
            return &cfg->tables[i];
    return NULL;
}

void kvshm_config_free(struct kvshm_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->ntables; i++) {
        free(cfg->tables[i].key.fields);
        free(cfg->tables[i].value.fields);
        free(cfg->tables[i].near.key.fields);
    }
    free(cfg->tables);
    free(cfg);
}

void kvshm_diag_free(struct kvshm_diag *diag)
{
    if (!diag)
        return;
    free(diag->text);
    diag->text = NULL;
    diag->count = 0;
    diag->truncated = false;
}
