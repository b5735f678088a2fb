/* redis_reply.c - the reply objects of every vigil_redis connection. See
 * redis_raw.h (vigil_redis_reply_functions, vigil_redis_reply_free).
 *
 * hiredis's own objects cost two allocations per reply (the object, then
 * a copy of its string) and a third for an array's element vector; a
 * commit's pipeline reads about ten replies, half of them the "+QUEUED"
 * of a command inside MULTI. Here a reply is one allocation (the string
 * or the element vector follows the object), and the replies that carry
 * no information of their own ("+OK", "+QUEUED", nil, the integers 0 and
 * 1) are shared read-only objects that are never allocated nor freed.
 * The redisReply layout is hiredis's, so every reader of a reply is
 * unchanged; only the free differs, which is why freeReplyObject must
 * never see one of these (test_repo_rules.py keeps it out of the code). */
#include "vigil/redis_raw.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SHARED_OK 0
#define SHARED_QUEUED 1
#define SHARED_NIL 2
#define SHARED_ZERO 3
#define SHARED_ONE 4
#define SHARED_COUNT 5

/* Read-only: the readers of a reply never write to it (they only look),
 * and several threads' connections hand out the same objects. */
static redisReply shared[SHARED_COUNT] = {
    [SHARED_OK] = { .type = REDIS_REPLY_STATUS, .len = 2, .str = (char *)"OK" },
    [SHARED_QUEUED] = { .type = REDIS_REPLY_STATUS, .len = 6, .str = (char *)"QUEUED" },
    [SHARED_NIL] = { .type = REDIS_REPLY_NIL },
    [SHARED_ZERO] = { .type = REDIS_REPLY_INTEGER, .integer = 0 },
    [SHARED_ONE] = { .type = REDIS_REPLY_INTEGER, .integer = 1 },
};

static bool is_shared(const redisReply *r)
{
    uintptr_t p = (uintptr_t)r;
    return p >= (uintptr_t)&shared[0] && p < (uintptr_t)&shared[SHARED_COUNT];
}

/* Hooks a finished object into its array, as hiredis's objects do: the
 * reader fills an array's slots through the child tasks. */
static void *attach(const redisReadTask *task, redisReply *r)
{
    if (task->parent) {
        redisReply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
    if (task->type == REDIS_REPLY_STATUS) {
        if (len == 2 && memcmp(str, "OK", 2) == 0)
            return attach(task, &shared[SHARED_OK]);
        if (len == 6 && memcmp(str, "QUEUED", 6) == 0)
            return attach(task, &shared[SHARED_QUEUED]);
    }
    if (len > SIZE_MAX - sizeof(redisReply) - 1)
        return NULL;
    redisReply *r = malloc(sizeof *r + len + 1);
    if (!r)
        return NULL; /* hiredis: out of memory, the reader fails */
    char *buf = (char *)(r + 1);
    memcpy(buf, str, len);
    buf[len] = '\0';
    *r = (redisReply){ .type = task->type, .len = len, .str = buf };
    return attach(task, r);
}

static void *create_array(const redisReadTask *task, int elements)
{
    size_t n = elements > 0 ? (size_t)elements : 0;
    if (n > (SIZE_MAX - sizeof(redisReply)) / sizeof(redisReply *))
        return NULL;
    redisReply *r = malloc(sizeof *r + n * sizeof(redisReply *));
    if (!r)
        return NULL;
    redisReply **slots = n ? (redisReply **)(r + 1) : NULL;
    if (n)
        memset(slots, 0, n * sizeof *slots); /* a reply cut short frees only what it holds */
    *r = (redisReply){ .type = REDIS_REPLY_ARRAY, .elements = n, .element = slots };
    return attach(task, r);
}

static void *create_integer(const redisReadTask *task, long long value)
{
    if (value == 0 || value == 1)
        return attach(task, &shared[value ? SHARED_ONE : SHARED_ZERO]);
    redisReply *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    *r = (redisReply){ .type = REDIS_REPLY_INTEGER, .integer = value };
    return attach(task, r);
}

static void *create_nil(const redisReadTask *task)
{
    return attach(task, &shared[SHARED_NIL]);
}

void vigil_redis_reply_free(void *reply)
{
    redisReply *r = reply;
    if (!r || is_shared(r))
        return;
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++)
            vigil_redis_reply_free(r->element[i]);
    free(r);
}

redisReply *vigil_redis_reply_detach(redisReply *array, size_t i)
{
    if (!array || array->type != REDIS_REPLY_ARRAY || i >= array->elements)
        return NULL;
    redisReply *e = array->element[i];
    if (!is_shared(array)) /* a shared object has no elements to empty */
        array->element[i] = NULL;
    return e;
}

redisReplyObjectFunctions vigil_redis_reply_functions = {
    .createString = create_string,
    .createArray = create_array,
    .createInteger = create_integer,
    .createNil = create_nil,
    .freeObject = vigil_redis_reply_free,
};
