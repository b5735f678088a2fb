/* malloc_tune.h - a larger per-thread cache of freed blocks in glibc's
 * malloc for the daemons.
 *
 * glibc keeps at most 7 freed blocks of each size per thread (its tcache)
 * and sends the rest to its shared bins, from which a later malloc takes
 * them back at several times the cost. A batch of inputs allocates dozens
 * of blocks of a size and frees them together, so most of them took that
 * slow way: with room for 200 blocks per size, dormancy-monitor runs about
 * 6 % fewer instructions per input. glibc reads the setting only from the
 * GLIBC_TUNABLES environment variable when a program starts, so a daemon
 * starts itself again, once, with it (the same process id, before any
 * thread or connection exists). A GLIBC_TUNABLES that already names
 * glibc.malloc.tcache_count is left as it is: the operator's choice (7 is
 * glibc's own). */
#ifndef VIGIL_MALLOC_TUNE_H
#define VIGIL_MALLOC_TUNE_H

#define VIGIL_MALLOC_TCACHE_COUNT 200
#define VIGIL_MALLOC_TUNABLE "glibc.malloc.tcache_count"

/* The GLIBC_TUNABLES value to start with, given the current one (NULL:
 * unset): cur with VIGIL_MALLOC_TUNABLE=VIGIL_MALLOC_TCACHE_COUNT added,
 * malloc'd; NULL when cur names that tunable already, or without memory. */
char *vigil_malloc_tunables(const char *cur);

/* Starts this program again (/proc/self/exe, argv, the environment) with
 * the tunable, unless the environment has it already or this process was
 * started that way once (then it returns at once). Returns only when the
 * program goes on as it is: glibc is not the C library, or the new start
 * failed (logged by the caller's choice: nothing is printed here). */
void vigil_malloc_tune(char **argv);

#endif
