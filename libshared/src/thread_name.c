/* thread_name.c - see vigil/thread_name.h. */
#define _GNU_SOURCE
#include "vigil/thread_name.h"

#include <pthread.h>
#include <string.h>

void vigil_thread_name(const char *name)
{
    char cut[16]; /* the kernel keeps 15 bytes and the NUL: longer fails */
    if (!name)
        return;
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = '\0';
    (void)pthread_setname_np(pthread_self(), cut);
}
