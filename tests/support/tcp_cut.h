/* tcp_cut.h - a loopback TCP relay whose connections a test can cut.
 *
 * A client connects to the relay's port instead of the server's; the relay
 * copies bytes both ways. vt_tcp_cut_reset() ends every connection at once
 * with a TCP reset, as a dropped network path or a crashed peer would,
 * while the server itself stays up (and keeps e.g. an MQTT session). */
#ifndef VT_TCP_CUT_H
#define VT_TCP_CUT_H

typedef struct vt_tcp_cut vt_tcp_cut;

/* Listens on 127.0.0.1 (a free port) and relays to 127.0.0.1:target_port. */
vt_tcp_cut *vt_tcp_cut_start(int target_port);
int vt_tcp_cut_port(const vt_tcp_cut *c);
/* Resets every open connection; returns how many were cut. */
int vt_tcp_cut_reset(vt_tcp_cut *c);
void vt_tcp_cut_stop(vt_tcp_cut *c);

/* A gate on new connections: with one set, the relay reads a connection's
 * first segment (a client's CONNECT, say) before it dials the server, and
 * asks gate: 0 relays it, 1 writes the *replylen bytes gate put in reply
 * (at most 64) and closes, -1 closes without a word. Set it before any
 * client connects. */
typedef int (*vt_tcp_gate_fn)(const unsigned char *first, int n, void *ctx, unsigned char *reply,
                              int *replylen);
void vt_tcp_cut_set_gate(vt_tcp_cut *c, vt_tcp_gate_fn gate, void *ctx);

#endif
