/* agents_status.c - `vigil agents status`: the agents' status checker. One
 * line per agent with 🟢 fresh / 🟡 warning / 🟠 critical / 🔴 auto-resume,
 * its confidence, its activity sources and its category, read from the
 * retained agent/{a}/assessment (stall-resumer) and agent/{a}/status topics
 * on the broker: never from the service's Redis keys.
 *
 * The category is taken at the time of the call: an agent with detected
 * activity (is_active in its assessment) is fresh whatever its status age;
 * otherwise its status age (or, without a status, the age of its newest
 * activity) against VIGIL_STALL_WARNING_MS / _CRITICAL_MS / _AUTORESUME_MS.
 * --no-activity-check ignores the assessments' activity (legacy mode).
 *
 * stall-resumer republishes every assessment at each scan
 * (VIGIL_STALL_SCAN_MS), so one older than STALE_SCANS scans is from a
 * service that no longer scans: its "active" is not trusted (the agent may
 * have stopped since), the agent is judged by its status age and the line
 * says so. */
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <vigil/clock.h>
#include <vigil/json.h>
#include "cli.h"
#include "help.h"
#include "opts.h"
#include "stall.h"

#define MAX_AGENTS 131072
#define QUIET_MS 150 /* retained messages come in a burst after the SUBACK */
#define STALE_SCANS 3  /* an assessment older than this many scan periods is stale */

typedef struct agent_row {
    char agent[STALL_ID_MAX + 1];
    json_object *assessment; /* owned, NULL if none */
    json_object *status;     /* owned, NULL if none */
} agent_row;

typedef struct collect {
    pthread_mutex_t mu;
    agent_row *rows;
    size_t n, cap;
    size_t *index; /* open addressing over rows: slot -> row + 1 (0 = empty) */
    size_t index_cap;
    int64_t last_msg; /* monotonic ms */
    bool overflow;
} collect;

/* Rebuilds the index at twice the row capacity (load <= 1/2). */
static bool reindex(collect *c)
{
    size_t cap = c->cap * 2;
    size_t *idx = calloc(cap, sizeof *idx);
    if (!idx)
        return false;
    for (size_t i = 0; i < c->n; i++) {
        size_t h = (size_t)vigil_hash64(c->rows[i].agent, strlen(c->rows[i].agent)) % cap;
        while (idx[h])
            h = (h + 1) % cap;
        idx[h] = i + 1;
    }
    free(c->index);
    c->index = idx;
    c->index_cap = cap;
    return true;
}

static agent_row *row_for(collect *c, const char *agent)
{
    size_t h = 0;
    if (c->index_cap) {
        h = (size_t)vigil_hash64(agent, strlen(agent)) % c->index_cap;
        for (; c->index[h]; h = (h + 1) % c->index_cap)
            if (strcmp(c->rows[c->index[h] - 1].agent, agent) == 0)
                return &c->rows[c->index[h] - 1];
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        if (cap > MAX_AGENTS) {
            c->overflow = true;
            return NULL;
        }
        agent_row *r = realloc(c->rows, cap * sizeof *r);
        if (!r)
            return NULL;
        c->rows = r;
        c->cap = cap;
    }
    agent_row *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->agent, sizeof r->agent, "%s", agent);
    if (c->index_cap < c->cap * 2) {
        if (!reindex(c)) {
            c->n--;
            return NULL;
        }
    } else {
        h = (size_t)vigil_hash64(agent, strlen(agent)) % c->index_cap;
        while (c->index[h])
            h = (h + 1) % c->index_cap;
        c->index[h] = c->n;
    }
    return r;
}

/* On paho's thread: keep the newest retained payload per agent and kind. */
static void on_message(void *ctx, const char *topic, const void *payload, size_t len, bool retained)
{
    collect *c = ctx;
    char agent[STALL_ID_MAX + 1], kind[16];
    const char *p = strchr(topic, '/'), *q = p ? strchr(p + 1, '/') : NULL;
    if (!p || !q || (size_t)(q - p - 1) > STALL_ID_MAX || strlen(q + 1) >= sizeof kind)
        return;
    memcpy(agent, p + 1, (size_t)(q - p - 1));
    agent[q - p - 1] = '\0';
    snprintf(kind, sizeof kind, "%s", q + 1);
    vigil_error err;
    json_object *o = len ? vigil_json_parse_object(payload, len, 1 << 20, &err) : NULL;
    (void)retained;
    pthread_mutex_lock(&c->mu);
    c->last_msg = vigil_mono_ms();
    agent_row *r = o && vigil_id_valid(agent, strlen(agent)) ? row_for(c, agent) : NULL;
    if (r) {
        json_object **slot = strcmp(kind, "assessment") == 0 ? &r->assessment : &r->status;
        json_object_put(*slot);
        *slot = o;
        o = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    json_object_put(o);
}

static int64_t get_i64(json_object *o, const char *k, int64_t def)
{
    json_object *v;
    return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_int)
               ? json_object_get_int64(v)
               : def;
}

static const char *get_str(json_object *o, const char *k, const char *def)
{
    json_object *v;
    return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : def;
}

static bool get_bool(json_object *o, const char *k)
{
    json_object *v;
    return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_boolean) &&
           json_object_get_boolean(v);
}

typedef struct verdict {
    stall_category cat;
    bool known;      /* some age to judge by */
    bool active;
    double confidence;
    bool has_assessment;
    bool stale;             /* the assessment is older than STALE_SCANS scans */
    int64_t assessed_ms;    /* its age */
    int64_t age_ms;
    bool aged_from_status;
    char sources[256];
} verdict;

static void judge(const agent_row *r, const stall_config *cfg, bool activity_check, int64_t now,
                  verdict *v)
{
    memset(v, 0, sizeof *v);
    v->has_assessment = r->assessment != NULL;
    int64_t assessed = get_i64(r->assessment, "ts", 0);
    v->assessed_ms = assessed > 0 && now > assessed ? now - assessed : 0;
    v->stale = assessed > 0 && v->assessed_ms > STALE_SCANS * cfg->scan_ms;
    v->active = activity_check && !v->stale && get_bool(r->assessment, "is_active");
    json_object *conf;
    if (r->assessment && json_object_object_get_ex(r->assessment, "confidence", &conf))
        v->confidence = json_object_get_double(conf);
    /* the status's own ts; without one, the time stall-resumer gave it */
    int64_t ref = get_i64(r->status, "ts", 0);
    if (ref <= 0)
        ref = get_i64(r->assessment, "status_ts", 0);
    v->aged_from_status = ref > 0;
    if (ref <= 0)
        ref = get_i64(r->assessment, "last_activity", 0);
    v->known = ref > 0 || v->active;
    v->age_ms = ref > 0 && now > ref ? now - ref : 0;
    /* nothing known to age it by: stall-resumer fails open (auto-resume) */
    v->cat = v->active  ? STALL_CAT_FRESH
             : v->known ? stall_category_of_age(cfg, v->age_ms)
                        : STALL_CAT_AUTO_RESUME;
    json_object *sigs;
    size_t len = 0;
    if (r->assessment && json_object_object_get_ex(r->assessment, "signals", &sigs) &&
        json_object_is_type(sigs, json_type_array)) {
        size_t n = json_object_array_length(sigs);
        for (size_t i = 0; i < n; i++) {
            const char *src = get_str(json_object_array_get_idx(sigs, i), "source", NULL);
            if (!src || strstr(v->sources, src))
                continue;
            int w = snprintf(v->sources + len, sizeof v->sources - len, "%s%s", len ? "," : "", src);
            if (w < 0 || (size_t)w >= sizeof v->sources - len)
                break;
            len += (size_t)w;
        }
    }
}

static const char *EMOJI[] = {"🟢", "🟡", "🟠", "🔴"};
static const char *LABEL[] = {"FRESH", "WARNING", "CRITICAL", "AUTO-RESUME"};

typedef struct sorted {
    const agent_row *r;
    verdict v;
} sorted;

/* Worst first, then by name. */
static int cmp_sorted(const void *a, const void *b)
{
    const sorted *x = a, *y = b;
    if (x->v.cat != y->v.cat)
        return x->v.cat > y->v.cat ? -1 : 1;
    return strcmp(x->r->agent, y->r->agent);
}

static void print_line(const sorted *s, bool activity_check)
{
    const verdict *v = &s->v;
    printf("%s %-11s %-24s", EMOJI[v->cat], LABEL[v->cat], s->r->agent);
    if (activity_check && v->has_assessment)
        printf("  confidence %.3f %-8s", v->confidence,
               v->stale ? "stale" : v->active ? "active" : "inactive");
    else if (activity_check)
        printf("  confidence -     %-8s", "unknown");
    char age[32];
    stall_age_text(v->age_ms, age, sizeof age);
    if (v->known)
        printf("  %s %s", v->aged_from_status ? "status" : "activity", age);
    else
        printf("  no status, no activity known");
    const char *fsm = get_str(s->r->status, "fsm_state", get_str(s->r->assessment, "fsm_state", NULL));
    if (fsm) {
        fputs("  ", stdout);
        cli_write_escaped(stdout, fsm);
    }
    if (activity_check)
        printf("  sources %s", v->sources[0] ? v->sources : "-");
    if (activity_check && v->has_assessment && !v->stale && !v->active &&
        v->cat != STALL_CAT_FRESH && get_bool(s->r->assessment, "validation_passed") == false &&
        v->confidence > 0)
        fputs("  (validation failed)", stdout);
    if (activity_check && v->stale) {
        char old[32];
        stall_age_text(v->assessed_ms, old, sizeof old);
        printf("  (assessed %s ago: is stall-resumer running? activity not trusted)", old);
    }
    fputc('\n', stdout);
}

static void print_json(const sorted *s, bool activity_check)
{
    const verdict *v = &s->v;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "agent", json_object_new_string(s->r->agent));
    json_object_object_add(o, "category", json_object_new_string(stall_category_name(v->cat)));
    json_object_object_add(o, "emoji", json_object_new_string(EMOJI[v->cat]));
    json_object_object_add(o, "activity_check", json_object_new_boolean(activity_check));
    json_object_object_add(o, "is_active", json_object_new_boolean(v->active));
    if (v->has_assessment) {
        json_object_object_add(o, "confidence", json_object_new_double(v->confidence));
        json_object_object_add(o, "assessed_ms_ago", json_object_new_int64(v->assessed_ms));
        json_object_object_add(o, "assessment_stale", json_object_new_boolean(v->stale));
    }
    json_object *src = json_object_new_array();
    char buf[sizeof v->sources];
    snprintf(buf, sizeof buf, "%s", v->sources);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_object_array_add(src, json_object_new_string(t));
    json_object_object_add(o, "sources", src);
    if (v->known) {
        json_object_object_add(o, "age_ms", json_object_new_int64(v->age_ms));
        json_object_object_add(o, "aged_from",
                               json_object_new_string(v->aged_from_status ? "status" : "activity"));
    }
    const char *fsm = get_str(s->r->status, "fsm_state", get_str(s->r->assessment, "fsm_state", NULL));
    if (fsm)
        json_object_object_add(o, "fsm_state", json_object_new_string(fsm));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

/* The thresholds as stall-resumer reads and checks them (the same ranges,
 * the same order rule, the same words), so a configuration it refuses is
 * refused here too instead of giving categories it would never give. */
static int load_thresholds(stall_config *cfg)
{
    char err[200];
    stall_config_init(cfg);
    if (vigil_env_ms("VIGIL_STALL_WARNING_MS", cfg->warning_ms, 1, &cfg->warning_ms, err,
                     sizeof err) ||
        vigil_env_ms("VIGIL_STALL_CRITICAL_MS", cfg->critical_ms, 1, &cfg->critical_ms, err,
                     sizeof err) ||
        vigil_env_ms("VIGIL_STALL_AUTORESUME_MS", cfg->autoresume_ms, 1, &cfg->autoresume_ms, err,
                     sizeof err) ||
        vigil_env_ms("VIGIL_STALL_SCAN_MS", cfg->scan_ms, 10, &cfg->scan_ms, err, sizeof err) ||
        stall_config_check(cfg, err, sizeof err))
        return cli_fail(CLI_ERR_USAGE, "configuration error: %s", err);
    return CLI_OK;
}

int cli_agents_status(cli *c, int argc, char **argv)
{
    bool json = false, activity_check = true;
    static const struct option LONG[] = {{"json", no_argument, NULL, 'j'},
                                         {"no-activity-check", no_argument, NULL, 'n'},
                                         {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", LONG, NULL)) != -1) {
        if (opt == 'j')
            json = true;
        else if (opt == 'n')
            activity_check = false;
        else
            return cli_opt_error("agents", opt, optopt, argv);
    }
    if (optind < argc)
        return cli_usage_error("agents", "agents status takes no arguments");
    stall_config cfg;
    int rc = load_thresholds(&cfg);
    if (rc != CLI_OK)
        return rc;
    static collect col;
    memset(&col, 0, sizeof col);
    pthread_mutex_init(&col.mu, NULL);
    static const char *const SUBS[] = {"agent/+/assessment", "agent/+/status", NULL};
    rc = cli_mqtt(c, SUBS, on_message, &col);
    if (rc == CLI_OK) {
        /* the probe came back after every retained message of our
         * subscriptions; wait out a short quiet period anyway */
        int64_t deadline = vigil_mono_ms() + c->timeout_ms;
        for (;;) {
            pthread_mutex_lock(&col.mu);
            int64_t last = col.last_msg;
            pthread_mutex_unlock(&col.mu);
            int64_t now = vigil_mono_ms();
            if (now - last >= QUIET_MS || now >= deadline)
                break;
            vigil_sleep_ms(20, NULL);
        }
        cli_close(c); /* stops the MQTT client: no more callbacks */
    }
    if (rc == CLI_OK) {
        int64_t now = cli_now_ms();
        sorted *s = calloc(col.n ? col.n : 1, sizeof *s);
        if (!s) {
            rc = cli_fail(CLI_ERR_RUNTIME, "out of memory");
        } else {
            int counts[4] = {0};
            for (size_t i = 0; i < col.n; i++) {
                s[i].r = &col.rows[i];
                judge(&col.rows[i], &cfg, activity_check, now, &s[i].v);
                counts[s[i].v.cat]++;
            }
            qsort(s, col.n, sizeof *s, cmp_sorted);
            for (size_t i = 0; i < col.n; i++)
                json ? print_json(&s[i], activity_check) : print_line(&s[i], activity_check);
            if (!json) {
                if (col.n == 0)
                    printf("no agents (nothing retained on agent/+/status or agent/+/assessment)\n");
                else
                    printf("%zu agent(s): %d 🟢 fresh, %d 🟡 warning, %d 🟠 critical, %d 🔴 auto-resume%s\n",
                           col.n, counts[0], counts[1], counts[2], counts[3],
                           activity_check ? "" : " (activity check off: status age only)");
                if (col.overflow)
                    printf("(more than %d agents: the rest are not shown)\n", MAX_AGENTS);
            }
            free(s);
        }
    }
    for (size_t i = 0; i < col.n; i++) {
        json_object_put(col.rows[i].assessment);
        json_object_put(col.rows[i].status);
    }
    free(col.rows);
    free(col.index);
    pthread_mutex_destroy(&col.mu);
    return rc;
}
