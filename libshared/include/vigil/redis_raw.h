/* redis_raw.h - commands and raw hiredis replies on a vigil_redis (see
 * redis.h). For libshared's modules (store, timers, jobs, runtime, ...) and
 * the vigil CLI only: a service never includes it, nor any hiredis header
 * (tests/integration/test_repo_rules.py); it asks libshared for the
 * operation it needs instead (vigil/reads.h, vigil/jobs.h, ...). */
#ifndef VIGIL_REDIS_RAW_H
#define VIGIL_REDIS_RAW_H
#include <hiredis/hiredis.h>
#include "redis.h"

/* Every reply below is made by libshared's own reply functions (one
 * allocation per reply; "+OK", "+QUEUED", nil, 0 and 1 are shared objects):
 * free it with vigil_redis_reply_free, never hiredis's freeReplyObject.
 * Readers look at it as an ordinary redisReply and never write to it. */
void vigil_redis_reply_free(void *reply);
/* Element i of an array reply, which the caller now owns (free it with
 * vigil_redis_reply_free; its string stays valid until then): the array
 * keeps an empty slot. Lets a reader keep a bulk string without copying
 * it. NULL when there is no such element. */
redisReply *vigil_redis_reply_detach(redisReply *array, size_t i);
extern redisReplyObjectFunctions vigil_redis_reply_functions; /* installed on each connection */

/* Runs one command. Returns the reply (caller frees with vigil_redis_reply_free),
 * including error replies that concern the data (see
 * vigil_redis_error_transient), or NULL on a connection/IO error or a
 * transient error reply (the connection is dropped and will be
 * re-established by the next call; vigil_redis_last_error says why). */
redisReply *vigil_redis_command(vigil_redis *r, const char *fmt, ...);
redisReply *vigil_redis_commandv(vigil_redis *r, int argc, const char **argv,
                                 const size_t *argvlen);

/* Pipelining: append any number of commands, then collect the replies in
 * order. vigil_redis_pipeline_get returns NULL on IO error (connection
 * dropped; remaining replies are lost). */
int vigil_redis_append(vigil_redis *r, int argc, const char **argv, const size_t *argvlen);
redisReply *vigil_redis_pipeline_get(vigil_redis *r);

typedef struct vigil_script {
    const char *source; /* Lua source, static storage */
    char sha[41];       /* filled on first load */
} vigil_script;

#define VIGIL_SCRIPT(src) { (src), { 0 } }

/* EVALSHA script with nkeys keys followed by the other arguments
 * (argv[0..argc) = keys then args). On NOSCRIPT (or no sha yet) loads the
 * script and retries once. Same return convention as vigil_redis_command.
 * A vigil_script may be shared by several threads only after its sha is
 * set; the store and timer modules keep one per handle. */
redisReply *vigil_redis_eval(vigil_redis *r, vigil_script *s, int nkeys, int argc,
                             const char **argv, const size_t *argvlen);

/* Appends EVALSHA of a script whose sha is already known to the pipeline
 * (vigil_redis_append). -1 when the sha is not known yet (run the script
 * once with vigil_redis_eval first), or not connected. A NOSCRIPT reply
 * (Redis restarted) comes back through vigil_redis_pipeline_get as an
 * error reply; vigil_redis_script_forget makes the next vigil_redis_eval
 * load the script again. */
int vigil_redis_eval_append(vigil_redis *r, const vigil_script *s, int nkeys, int argc,
                            const char **argv, const size_t *argvlen);
void vigil_redis_script_forget(vigil_script *s);

#endif
