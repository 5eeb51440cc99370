/* config_keys.h: the config's schema, shared by config.c (reading, checking) and config_json.c
 * (the table itself, the field accessors, writing a config back). Internal to those two files:
 * everything else goes through config.h. */
#ifndef TT_CONFIG_KEYS_H
#define TT_CONFIG_KEYS_H

#include "train/config/config.h"

/* T_PATH: a string resolved against the config's folder; T_STRS: an array of strings. */
typedef enum { T_INT, T_I64, T_NUM, T_BOOL, T_ENUM, T_STR, T_PATH, T_STRS } ktype;

/* REQUIRED: no default. DERIVED: the default depends on other keys (check_rules fills it).
 * OPTIONAL: no default either; absent, the field stays 0 and the resolved JSON leaves the key
 * out (as it leaves out a path that a rule emptied: data.valid under data.valid_share). */
enum { REQUIRED = 1, DERIVED = 2, OPTIONAL = 4 };

typedef struct tt_config_key {
    const char *section; /* NULL for a top-level key */
    const char *name;
    ktype type;
    size_t off, size;      /* the field in tt_config (an int, int64_t, double, bool, enum...) */
    size_t count_off;      /* T_STRS: the int that counts the strings */
    double lo, hi;         /* numbers: the allowed range, bounds included... */
    bool lo_open, hi_open; /* ...unless open (T_NUM only) */
    const char *names[5];  /* T_ENUM: the strings in the enum's order (a bool field: false, true) */
    double def;            /* numbers, bools; enums: the index into names */
    const char *sdef;      /* T_STR, T_PATH */
    int flags;
    const char *why;       /* NULL, or why the range is narrower than the type's (messages) */
    /* The reference (tt_config_reference, docs/config.md): one line of meaning, in Markdown;
     * for a DERIVED key, dflt says what the default is; allowed, where set, replaces what
     * tt_config_allowed would say there (the reference only). */
    const char *doc, *dflt, *allowed;
} tt_config_key;

/* Every key, in the order tt_config_to_json writes them (config_json.c; a static assert there
 * keeps the count in step with the table). */
#define TT_CONFIG_N_KEYS 52
extern const tt_config_key tt_config_keys[];

/* Key k's field in c. */
static inline void *tt_config_field(tt_config *c, const tt_config_key *k)
{
    return (char *)c + k->off;
}

/* Stores d into key k's field: a number, a bool (0 or 1), an enum (the index into names). */
void tt_config_store(tt_config *c, const tt_config_key *k, double d);
/* The inverse of tt_config_store. */
double tt_config_fetch(const tt_config *c, const tt_config_key *k);
/* Key k has no value to write: an OPTIONAL key left out, or an emptied path. */
bool tt_config_absent(const tt_config *c, const tt_config_key *k);
/* What key k allows, as the reader's messages and the reference say it: "an integer >= 1", "a
 * number in [0, 1)", "\"post\", \"pre\"" (its `why` not included). */
const char *tt_config_allowed(const tt_config_key *k, char *buf, size_t len);
/* The shortest text that reads back as exactly d (cJSON's own printing may lose the last bits). */
const char *tt_config_number_text(double d, char *buf, size_t len);

/* text, which parsed into root: whether a string of it (a key or a value) holds the escape
 * \u0000, which cJSON decodes into a NUL that cuts the string short; then its JSON path
 * ("model.attn_scale", "data.probes[1]"; "" for root itself, a string) into path, and *key
 * whether it is a key (the path then ends with the key up to the NUL). */
struct cJSON;
bool tt_json_nul_path(const char *text, const struct cJSON *root, char *path, size_t len,
                      bool *key);

#endif
