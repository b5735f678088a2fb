/* tcp_quickack.h - private to libshared/src: acknowledge the broker's TCP
 * segments at once.
 *
 * A broker that does not set TCP_NODELAY (mosquitto as shipped) sends one
 * small segment (a PUBACK) and holds the next ones until our kernel
 * acknowledges it; Linux delays that ACK up to 40 ms when we have no data
 * to send back (a publisher waiting for its PUBACKs). Setting TCP_QUICKACK
 * on our socket right after a PUBACK arrived sends the pending ACK now, so
 * the broker's next PUBACKs follow within microseconds. paho does not expose
 * its socket, so it is found by its peer port among the process's sockets
 * (once per connect). */
#ifndef VIGIL_TCP_QUICKACK_H
#define VIGIL_TCP_QUICKACK_H

/* Connected TCP sockets of this process whose peer port is port; returns
 * how many were stored in fds (at most max). */
int vigil_tcp_find_peer_fds(int port, int *fds, int max);
/* Sets TCP_QUICKACK on each (errors ignored: a socket closed meanwhile). */
void vigil_tcp_quickack(const int *fds, int n);

#endif
