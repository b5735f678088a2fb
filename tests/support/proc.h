/* proc.h - small helpers shared by the test servers (redis_server.c,
 * mosquitto_server.c): a free loopback port, removing a temp tree, and
 * showing the end of a server's log when it fails to start. */
#ifndef VT_PROC_H
#define VT_PROC_H

/* A port that was free on 127.0.0.1 a moment ago (bind to 0, read back). */
int vt_free_port(void);
/* Removes a directory tree (or a file). */
void vt_rm_rf(const char *path);
/* Prints the last ~2 KiB of the file at path to stderr under a title. */
void vt_dump_tail(const char *path, const char *title);

#endif
