/* unique.h - values no other process draws: random bytes from the kernel,
 * and 64-bit tokens that name one version of a record (a version written by
 * a replica that crashed before its commit must never be mistaken for the
 * version another replica writes next). */
#ifndef VIGIL_UNIQUE_H
#define VIGIL_UNIQUE_H
#include <stddef.h>
#include <stdint.h>

/* n random bytes (getrandom); if the kernel has none to give, the clock,
 * the pid and an address, which still differ between processes. */
void vigil_random_bytes(void *buf, size_t n);

/* A token this process has not returned before, from a random start per
 * process (so two processes do not meet): thread-safe, never 0. */
uint64_t vigil_unique_u64(void);

#endif
