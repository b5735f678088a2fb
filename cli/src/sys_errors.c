/* sys_errors.c - `vigil errors [--follow] [--service S] [--json]`: what the
 * services refuse. Error events (sys/<service>/error) are not retained, so
 * this listens: for VIGIL_CLI_TIMEOUT_MS, or until interrupted with
 * --follow. */
#include <signal.h>
#include <string.h>
#include <vigil/clock.h>
#include "opts.h"
#include "ops.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void print_error(const ops_msg *m, bool json)
{
    if (json) {
        ops_print_json(m->json);
        return;
    }
    char when[32];
    ops_local_time(ops_int(m->json, "ts", m->at_ms), when, sizeof when);
    const char *svc = ops_str(m->json, "service");
    const char *topic = ops_str(m->json, "topic");
    printf("%s %s %s %s", when, *svc ? svc : "?", ops_str(m->json, "reason"),
           *topic ? topic : "-");
    const char *detail = ops_str(m->json, "detail");
    if (*detail) {
        fputc(' ', stdout);
        cli_write_escaped(stdout, detail);
    }
    fputc('\n', stdout);
    const char *sample = ops_str(m->json, "sample");
    if (*sample) {
        fputs("  sample: ", stdout);
        cli_write_sample(stdout, sample);
        fputc('\n', stdout);
    }
    fflush(stdout);
}

/* The client reconnects by itself (--follow outlives a broker restart):
 * one line on stderr when the connection is lost and one when it is back,
 * so that silence means "no errors", never "not connected". */
static void report_connection(cli *c, bool *up)
{
    bool now = vigil_mqtt_connected(c->mqtt);
    if (now == *up)
        return;
    *up = now;
    fputs(now ? "vigil: connection to the broker is back\n"
              : "vigil: connection to the broker lost; reconnecting\n",
          stderr);
}

int cli_errors(cli *c, int argc, char **argv)
{
    static const struct option LONG[] = { { "follow", no_argument, NULL, 'f' },
                                          { "service", required_argument, NULL, 's' },
                                          { "json", no_argument, NULL, 'j' },
                                          { 0, 0, 0, 0 } };
    bool follow = false, json = false;
    const char *service = NULL;
    int opt;
    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":f", LONG, NULL)) != -1) {
        if (opt == 'f')
            follow = true;
        else if (opt == 'j')
            json = true;
        else if (opt == 's')
            service = optarg;
        else
            return ops_opt_error("errors", opt, optopt, argv);
    }
    if (argc - optind > 0)
        return ops_usage_error("errors", "too many arguments");
    if (service && !vigil_id_valid(service, strlen(service)))
        return ops_usage_error("errors", "bad --service: use 1-64 characters of A-Z a-z 0-9 . _ -");
    char topic[CHAT_ID_MAX + 16];
    snprintf(topic, sizeof topic, "sys/%s/error", service ? service : "+");
    const char *subs[] = { topic, NULL };
    ops_inbox in;
    ops_inbox_init(&in);
    int rc = ops_subscribe(c, subs, &in);
    if (rc == CLI_OK) {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        int64_t deadline = vigil_mono_ms() + c->timeout_ms;
        bool up = true;
        while (!g_stop && (follow || vigil_mono_ms() < deadline)) {
            report_connection(c, &up);
            ops_msg m;
            if (!ops_inbox_take(&in, &m)) {
                vigil_sleep_ms(20, NULL);
                continue;
            }
            if (m.json)
                print_error(&m, json);
            ops_msg_free(&m);
        }
    }
    cli_close(c);
    ops_inbox_free(&in);
    return rc;
}
