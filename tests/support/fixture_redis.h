/* fixture_redis.h - the setup libshared's unit tests against Redis share:
 * one throwaway redis-server per test program (vt_redis_group_setup and
 * vt_redis_group_teardown, as the cmocka group's setup and teardown, the
 * log initialised under the program's name; with _conn, a connection kept
 * for the group too), connections to it, and per
 * test a flushed database with a store on a fresh connection. */
#ifndef VT_FIXTURE_REDIS_H
#define VT_FIXTURE_REDIS_H
#include "redis_server.h"
#include "vigil/redis.h"
#include "vigil/store.h"

/* The group's server (NULL outside the group). */
extern vt_redis *vt_srv;

int vt_redis_group_setup(void **state);
int vt_redis_group_teardown(void **state);

/* The same with one connection to it for the whole group, vt_conn. */
extern vigil_redis *vt_conn;
int vt_redis_group_setup_conn(void **state);
int vt_redis_group_teardown_conn(void **state);

/* A new connection to vt_srv (2 s command timeout); NULL on failure. */
vigil_redis *vt_redis_connect(void);

/* The integer reply of fmt (one %s, arg) on r; any other reply fails the
 * test. */
long long vt_redis_int(vigil_redis *r, const char *fmt, const char *arg);

/* Calls of one Redis command (lower case, as INFO names it) since the
 * last CONFIG RESETSTAT, by INFO commandstats on r. */
long long vt_redis_calls(vigil_redis *r, const char *command);

/* The score of member in the sorted set key on r, or -1 when absent. */
long long vt_redis_zscore(vigil_redis *r, const char *key, const char *member);

/* The string at index i of the list key on r, malloc'd (anything else
 * fails the test). */
char *vt_redis_lindex(vigil_redis *r, const char *key, int i);

/* A test's connection and store. */
typedef struct vt_store_fixture {
    vigil_redis *r;
    vigil_store *s;
} vt_store_fixture;

/* FLUSHALL, then *state = a vt_store_fixture with a store of cfg on a new
 * connection. 0, or -1 (cmocka then fails the test). */
int vt_store_fixture_setup(void **state, const vigil_store_config *cfg);
int vt_store_fixture_teardown(void **state);

#endif
