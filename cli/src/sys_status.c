/* sys_status.c - `vigil status`: is everything up? The retained
 * sys/<service>/<instance>/status of every replica (what the broker knows:
 * ready, stopped, or lost by last will) and the /readyz answer of each
 * service's HTTP port (what the process itself says). */
#include <stdlib.h>
#include <string.h>
#include "opts.h"
#include "ops.h"

#define MAX_PORTS 32
#define HTTP_TIMEOUT_MS 2000

typedef struct port {
    char service[CHAT_ID_MAX + 1];
    int port;
    bool explicit; /* given with --port: must answer */
} port;

/* STATE is as wide as the widest state shown, "lost (replaced)". */
#define STATE_WIDTH 15

typedef struct opts {
    bool json, http;
    const char *host;
    port ports[MAX_PORTS];
    int nports;
} opts;

/* --port SERVICE=PORT: replaces the service's default or adds one. */
static int add_port(opts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    int64_t p;
    if (!eq || eq == arg || (size_t)(eq - arg) > CHAT_ID_MAX ||
        !vigil_id_valid(arg, (size_t)(eq - arg)) || !cli_parse_int(eq + 1, 1, 65535, &p))
        return -1;
    int i = 0;
    for (; i < o->nports; i++)
        if (strlen(o->ports[i].service) == (size_t)(eq - arg) &&
            strncmp(o->ports[i].service, arg, (size_t)(eq - arg)) == 0)
            break;
    if (i == o->nports) {
        if (o->nports == MAX_PORTS)
            return -1;
        o->nports++;
    }
    snprintf(o->ports[i].service, sizeof o->ports[i].service, "%.*s", (int)(eq - arg), arg);
    o->ports[i].port = (int)p;
    o->ports[i].explicit = true;
    return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    static const struct option LONG[] = { { "json", no_argument, NULL, 'j' },
                                          { "host", required_argument, NULL, 'H' },
                                          { "port", required_argument, NULL, 'p' },
                                          { "no-http", no_argument, NULL, 'n' },
                                          { "no-default-ports", no_argument, NULL, 'D' },
                                          { 0, 0, 0, 0 } };
    o->json = false;
    o->http = true;
    o->host = "127.0.0.1";
    o->nports = 0;
    for (size_t i = 0; i < CLI_SERVICES_N && o->nports < MAX_PORTS; i++, o->nports++) {
        snprintf(o->ports[i].service, sizeof o->ports[i].service, "%s", CLI_SERVICES[i].name);
        o->ports[i].port = CLI_SERVICES[i].port;
        o->ports[i].explicit = false;
    }
    bool no_defaults = false;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        if (opt == 'j')
            o->json = true;
        else if (opt == 'H')
            o->host = optarg;
        else if (opt == 'n')
            o->http = false;
        else if (opt == 'D')
            no_defaults = true;
        else if (opt == 'p') {
            if (add_port(o, optarg) != 0)
                return ops_usage_error("status", "bad --port: use SERVICE=PORT (PORT 1-65535)");
        } else
            return ops_opt_error("status", opt, optopt, argv);
    }
    if (argc - optind > 0)
        return ops_usage_error("status", "too many arguments");
    if (no_defaults) { /* keep only the --port ones */
        int k = 0;
        for (int i = 0; i < o->nports; i++)
            if (o->ports[i].explicit)
                o->ports[k++] = o->ports[i];
        o->nports = k;
    }
    if (!*o->host)
        return ops_usage_error("status", "bad --host");
    return CLI_OK;
}

static int cmp_status(const void *a, const void *b)
{
    json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
    int r = strcmp(ops_str(x, "service"), ops_str(y, "service"));
    return r ? r : strcmp(ops_str(x, "instance"), ops_str(y, "instance"));
}

/* The newest retained status per topic, sorted by service and instance,
 * as a json array. */
static json_object *collect(ops_inbox *in)
{
    json_object *by_topic = json_object_new_object();
    ops_msg m;
    while (ops_inbox_take(in, &m)) {
        if (m.json && m.retained) {
            json_object_object_add(by_topic, m.topic, m.json);
            m.json = NULL;
        }
        ops_msg_free(&m);
    }
    json_object *arr = json_object_new_array();
    json_object_object_foreach(by_topic, t, st)
    {
        (void)t;
        json_object_array_add(arr, json_object_get(st));
    }
    json_object_put(by_topic);
    json_object_array_sort(arr, cmp_status);
    return arr;
}

/* An instance that is not ready (lost, stopped) no longer matters when a
 * later instance of the same service and shard is ready: a replica that
 * crashed and came back under a new instance name (a new container) leaves
 * its retained `lost` behind, and `vigil status` would otherwise say NOT
 * READY for good. */
static bool replaced(json_object *inst, json_object *st)
{
    size_t n = json_object_array_length(inst);
    for (size_t j = 0; j < n; j++) {
        json_object *o = json_object_array_get_idx(inst, j);
        if (o != st && strcmp(ops_str(o, "state"), "ready") == 0 &&
            strcmp(ops_str(o, "service"), ops_str(st, "service")) == 0 &&
            strcmp(ops_str(o, "shard"), ops_str(st, "shard")) == 0 &&
            ops_int(o, "ts", 0) >= ops_int(st, "ts", 0))
            return true;
    }
    return false;
}

/* What the instances and the ports say, summed up for the verdict. */
typedef struct tally {
    bool all_ready;      /* no failure seen */
    bool any_running;    /* an instance ready */
    bool any_reachable;  /* a port answered */
    bool any_port_ready; /* a port answered /readyz with 200 */
} tally;

/* The instances' table (text) and their part of the tally: lost without a
 * replacement is a failure; disconnected (a clean stop) is none. */
static void check_instances(json_object *inst, bool json, tally *t)
{
    size_t n = json_object_array_length(inst);
    if (!json) {
        printf("%-18s %-28s %-*s %-8s %-5s %s\n", "SERVICE", "INSTANCE", STATE_WIDTH, "STATE",
               "VERSION", "SHARD", "SINCE");
        if (n == 0)
            printf("(no service has published a status)\n");
    }
    for (size_t i = 0; i < n; i++) {
        json_object *st = json_object_array_get_idx(inst, i);
        const char *state = ops_str(st, "state");
        bool ready = strcmp(state, "ready") == 0;
        bool gone = !ready && strcmp(state, "disconnected") != 0;
        bool superseded = gone && replaced(inst, st);
        t->any_running = t->any_running || ready;
        if (gone && !superseded)
            t->all_ready = false;
        if (superseded)
            json_object_object_add(st, "replaced", json_object_new_boolean(true));
        if (!json) {
            char since[32], shown[40];
            ops_local_time(ops_int(st, "ts", 0), since, sizeof since);
            snprintf(shown, sizeof shown, "%s%s", *state ? state : "?",
                     superseded ? " (replaced)" : "");
            printf("%-18s %-28s %-*s %-8s %-5s %s\n", ops_str(st, "service"),
                   ops_str(st, "instance"), STATE_WIDTH, shown, ops_str(st, "version"),
                   ops_str(st, "shard"), since);
        }
    }
}

/* GET /readyz on each port: its table (text), its JSON array, its part of
 * the tally. A default port where nothing listens is no failure (not every
 * deployment runs every service); one given with --port must answer. */
static json_object *check_ports(const opts *o, int64_t timeout_ms, tally *t)
{
    json_object *http = json_object_new_array();
    if (!o->http)
        return http;
    int tmo = timeout_ms < HTTP_TIMEOUT_MS ? (int)timeout_ms : HTTP_TIMEOUT_MS;
    if (!o->json)
        printf("\n%-18s %-22s %s\n", "SERVICE", "HTTP", "READY (GET /readyz)");
    for (int i = 0; i < o->nports; i++) {
        const port *p = &o->ports[i];
        int code = ops_http_status(o->host, p->port, "/readyz", tmo);
        bool ready = code == 200;
        t->any_reachable = t->any_reachable || code != 0;
        t->any_port_ready = t->any_port_ready || ready;
        if ((code != 0 && !ready) || (code == 0 && p->explicit))
            t->all_ready = false;
        json_object *h = json_object_new_object();
        json_object_object_add(h, "service", json_object_new_string(p->service));
        json_object_object_add(h, "host", json_object_new_string(o->host));
        json_object_object_add(h, "port", json_object_new_int(p->port));
        json_object_object_add(h, "reachable", json_object_new_boolean(code != 0));
        json_object_object_add(h, "status", code ? json_object_new_int(code) : NULL);
        json_object_object_add(h, "ready", json_object_new_boolean(ready));
        json_object_array_add(http, h);
        if (o->json)
            continue;
        char addr[96];
        snprintf(addr, sizeof addr, "%s:%d", o->host, p->port);
        if (code == 0)
            printf("%-18s %-22s unreachable%s\n", p->service, addr,
                   p->explicit ? " (NOT READY)" : "");
        else
            printf("%-18s %-22s %s (%d)\n", p->service, addr, ready ? "ready" : "NOT READY", code);
    }
    return http;
}

int cli_status(cli *c, int argc, char **argv)
{
    opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_OK)
        return rc;
    ops_inbox in;
    ops_inbox_init(&in);
    static const char *const SUBS[] = { "sys/+/+/status", NULL };
    rc = ops_subscribe(c, SUBS, &in);
    cli_close(c);
    if (rc != CLI_OK) {
        ops_inbox_free(&in);
        return rc;
    }
    json_object *inst = collect(&in);
    ops_inbox_free(&in);
    tally t = { .all_ready = true };
    size_t n = json_object_array_length(inst);
    check_instances(inst, o.json, &t);
    json_object *http = check_ports(&o, c->timeout_ms, &t);
    /* Nothing at all answering is no "all ready": a wrong broker or prefix,
     * or nothing deployed, must not pass a health check. Nor does a
     * deployment whose every instance stopped (a clean stop of one replica
     * among running ones is no failure; of all of them it is). */
    bool answered = n > 0 || t.any_reachable;
    bool stopped = n > 0 && !t.any_running && !t.any_port_ready;
    if (!answered || stopped)
        t.all_ready = false;
    if (o.json) {
        json_object *out = json_object_new_object();
        json_object_object_add(out, "instances", inst);
        json_object_object_add(out, "http", http);
        json_object_object_add(out, "ready", json_object_new_boolean(t.all_ready));
        ops_print_json(out);
        json_object_put(out);
    } else {
        json_object_put(inst);
        json_object_put(http);
        if (!answered)
            printf("\nNOT READY: no service instance has published a status%s (are "
                   "VIGIL_MQTT_URL and VIGIL_TOPIC_PREFIX the services' ones?)\n",
                   o.http ? " and no HTTP port answered" : "");
        else if (stopped)
            printf("\nNOT READY: no service instance is running (every one that reports is "
                   "disconnected or lost%s)\n",
                   o.http ? ", and no HTTP port answered /readyz with 200" : "");
        else
            printf("\n%s\n", t.all_ready ? "all ready" : "NOT READY");
    }
    return t.all_ready ? CLI_OK : OPS_EXIT_NOT_READY;
}
