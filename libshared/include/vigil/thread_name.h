/* thread_name.h - names for libshared's threads, as `top -H`, `ps -L`,
 * gdb and /proc/<pid>/task/<tid>/comm show them ("vigil-intake",
 * "vigil-publish", "vigil-outbox", "vigil-timers", ...), so an operator
 * (or scripts/bench) can tell which thread spends the CPU. */
#ifndef VIGIL_THREAD_NAME_H
#define VIGIL_THREAD_NAME_H

/* Names the calling thread: at most 15 bytes are kept (the kernel's
 * limit). A failure changes nothing and is ignored: the name is only for
 * people looking. */
void vigil_thread_name(const char *name);

#endif
