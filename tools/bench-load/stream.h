/* stream.h - vigil-bench-load's input and results: the stream file (one
 * message a line, key TAB topic TAB payload), the index from a key to its
 * line, the key found in a received payload, and the results file. */
#ifndef VIGIL_BENCH_LOAD_STREAM_H
#define VIGIL_BENCH_LOAD_STREAM_H
#include <stddef.h>
#include <stdint.h>

typedef struct bl_msg {
    const char *key, *topic;
    const unsigned char *payload;
    size_t klen, tlen, plen;
    int64_t pub_ns;  /* -1 until written to the socket */
    int64_t recv_ns; /* -1 until its first arrival at the subscriber */
} bl_msg;

typedef struct bl_stream {
    char *text; /* the whole file, its tabs and newlines turned into NULs */
    bl_msg *msgs;
    size_t n;
    uint32_t *slots; /* open addressing: index + 1, 0 = empty */
    size_t mask;
} bl_stream;

/* Reads and indexes FILE. 0, or -1 with the reason in err (a missing
 * file, a line without two tabs, an invalid topic, a key twice). */
int bl_stream_load(bl_stream *s, const char *path, char *err, size_t errlen);
/* The message of this key, or NULL. */
bl_msg *bl_stream_find(const bl_stream *s, const char *key, size_t klen);
/* The JSON string value of "field" in a payload (the first one), as KEY_RE
 * in scripts/bench.py finds it: *klen bytes at the result, or NULL. */
const char *bl_find_key(const unsigned char *p, size_t n, const char *field, size_t flen,
                        size_t *klen);
/* Writes key TAB pub_ns TAB recv_ns per message. 0, or -1 (errno). */
int bl_stream_write_results(const bl_stream *s, const char *path);
void bl_stream_free(bl_stream *s);

#endif
