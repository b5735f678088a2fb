/* json_build.h - the json-c nodes of a payload's tokens, made as json-c
 * 0.16's tokener (JSON_TOKENER_STRICT) makes them, for json.c's parser:
 * it checks the syntax and calls these with each token it accepted.
 * Every function trusts that syntax (escapes complete, numbers well
 * formed) and returns NULL or -1 only when out of memory. Private to
 * libshared/pure. */
#ifndef VIGIL_JSON_BUILD_H
#define VIGIL_JSON_BUILD_H
#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/* A string node of the n bytes between a string's quotes; escaped: the
 * bytes hold a backslash (else they are copied as they are). */
json_object *vigil_jb_string(const unsigned char *s, size_t n, bool escaped);

/* Adds val to obj under the key written by the n bytes between the
 * key's quotes, as the tokener does: the key ends at its first NUL (a
 * "\u0000" in it), and a key already there keeps its place and takes the
 * new value. Takes val in any case: -1 (out of memory) has put it. */
int vigil_jb_member(json_object *obj, const unsigned char *key, size_t n, bool escaped,
                    json_object *val);

/* A number node of the n bytes of a number; is_double: it has a fraction
 * or an exponent. */
json_object *vigil_jb_number(const unsigned char *s, size_t n, bool is_double);

#endif
