/* Tests of the LLM client (llm.c) through its real code path against
 * tests/support/fake_llm.py, a local OpenAI-compatible server started here
 * on a free port: answers, usage tokens, retries after 500 and 429 (with
 * Retry-After), closed connections, garbage, errors under HTTP 200,
 * truncation, timeouts, refused connections, the disabled client, and many
 * requests in flight at once within the concurrency cap. Plus config
 * loading and the exact request body. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vigil/clock.h"
#include "vigil/llm.h"
#include "vigil/log.h"
#include "vigil/metrics.h"

static pid_t g_pid = -1;
static int g_port;
static char g_base[128]; /* http://127.0.0.1:<port> */

/* ------------------------------------------------------------------ */
/* The fake server                                                    */
/* ------------------------------------------------------------------ */

static void script_path(char *out, size_t cap)
{
    const char *src = getenv("VIGIL_SOURCE_DIR");
    if (src && *src) {
        snprintf(out, cap, "%s/tests/support/fake_llm.py", src);
        return;
    }
    /* __FILE__ is absolute under CMake: <src>/tests/unit/test_llm.c */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, cap, "%s/../support/fake_llm.py", dir);
}

/* Starts fake_llm.py --port 0 and reads its "PORT <n>" line (bounded
 * wait). The child dies with us (PR_SET_PDEATHSIG) even if a test aborts. */
static int start_server(void **state)
{
    (void)state;
    vigil_log_init("test_llm", "", VIGIL_LOG_ERROR);
    /* A proxy from the environment must not intercept 127.0.0.1. */
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("all_proxy");
    unsetenv("ALL_PROXY");
    char path[1200];
    script_path(path, sizeof path);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t parent = getpid();
    g_pid = fork();
    if (g_pid < 0)
        return -1;
    if (g_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl("/usr/bin/python3", "python3", path, "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[64] = {0};
    size_t n = 0;
    int64_t deadline = vigil_mono_ms() + 10000;
    while (n < sizeof line - 1 && !strchr(line, '\n')) {
        int64_t left = deadline - vigil_mono_ms();
        struct pollfd p = {fds[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t r = read(fds[0], line + n, sizeof line - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fds[0]);
    if (sscanf(line, "PORT %d", &g_port) != 1 || g_port <= 0) {
        fprintf(stderr, "fake_llm.py did not start (%s): got '%s'\n", path, line);
        kill(g_pid, SIGKILL);
        waitpid(g_pid, NULL, 0);
        g_pid = -1;
        return -1;
    }
    snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", g_port);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return 0;
}

static int stop_server(void **state)
{
    (void)state;
    if (g_pid > 0) {
        kill(g_pid, SIGTERM);
        int64_t deadline = vigil_mono_ms() + 3000;
        while (waitpid(g_pid, NULL, WNOHANG) == 0) {
            if (vigil_mono_ms() > deadline) {
                kill(g_pid, SIGKILL);
                waitpid(g_pid, NULL, 0);
                break;
            }
            vigil_sleep_ms(20, NULL);
        }
        g_pid = -1;
    }
    return 0;
}

typedef struct {
    char *data;
    size_t len;
} sink;

static size_t sink_write(char *p, size_t sz, size_t nm, void *ud)
{
    sink *s = ud;
    size_t n = sz * nm;
    char *nd = realloc(s->data, s->len + n + 1);
    if (!nd)
        return 0;
    memcpy(nd + s->len, p, n);
    s->data = nd;
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

/* A plain blocking request to the fake server's test endpoints. Returns
 * the parsed JSON answer (new reference). */
static json_object *fake_http(const char *path, const char *post_body)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", g_base, path);
    CURL *e = curl_easy_init();
    assert_non_null(e);
    sink s = {NULL, 0};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    if (post_body)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, post_body);
    CURLcode rc = curl_easy_perform(e);
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK || code != 200)
        fail_msg("%s: curl %d, HTTP %ld, body %s", path, (int)rc, code, s.data ? s.data : "");
    json_object *o = json_tokener_parse(s.data ? s.data : "");
    free(s.data);
    assert_non_null(o);
    return o;
}

static void control(const char *body)
{
    json_object_put(fake_http("/control", body));
}

static int64_t stat_int(json_object *stats, const char *key)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(stats, key, &v));
    return json_object_get_int64(v);
}

/* Every test starts from a well-behaved server with zeroed statistics and
 * its built-in answers (a test may replace them with its own rules). */
static int reset_server(void **state)
{
    (void)state;
    control("{\"reset\": true, \"rules\": null}");
    return 0;
}

/* ------------------------------------------------------------------ */
/* Driving the client                                                 */
/* ------------------------------------------------------------------ */

typedef struct {
    bool done;
    int calls;
    vigil_llm_status status;
    long http_code;
    char content[2048];
    bool has_content;
    char finish_reason[32];
    bool truncated;
    int64_t prompt_tokens, completion_tokens, total_tokens;
    int64_t latency_ms;
    int attempts;
    char model[128];
    char error[300];
} outcome;

static void on_done(const vigil_llm_result *r, void *user)
{
    outcome *o = user;
    o->done = true;
    o->calls++;
    o->status = r->status;
    o->http_code = r->http_code;
    o->has_content = r->content != NULL;
    snprintf(o->content, sizeof o->content, "%s", r->content ? r->content : "");
    snprintf(o->finish_reason, sizeof o->finish_reason, "%s", r->finish_reason);
    o->truncated = r->truncated;
    o->prompt_tokens = r->prompt_tokens;
    o->completion_tokens = r->completion_tokens;
    o->total_tokens = r->total_tokens;
    o->latency_ms = r->latency_ms;
    o->attempts = r->attempts;
    snprintf(o->model, sizeof o->model, "%s", r->model);
    snprintf(o->error, sizeof o->error, "%s", r->error);
}

static vigil_llm_config test_config(void)
{
    vigil_llm_config cfg;
    vigil_llm_config_init(&cfg);
    snprintf(cfg.url, sizeof cfg.url, "%s/v1", g_base);
    cfg.timeout_ms = 3000;
    cfg.connect_timeout_ms = 1000;
    cfg.backoff_base_ms = 20; /* keep retry tests quick; the policy is the same */
    cfg.backoff_cap_ms = 100;
    return cfg;
}

/* Runs the client until nothing is pending, failing past max_ms. Also
 * checks the concurrency cap is never exceeded. Returns elapsed ms. */
static int64_t drain(vigil_llm_client *c, int concurrency, int64_t max_ms)
{
    int64_t t0 = vigil_mono_ms();
    while (vigil_llm_pending(c) > 0) {
        assert_true(vigil_llm_run(c, 100, on_done) >= 0);
        assert_true(vigil_llm_in_flight(c) <= (size_t)concurrency);
        if (vigil_mono_ms() - t0 > max_ms)
            fail_msg("requests still pending after %lld ms", (long long)max_ms);
    }
    return vigil_mono_ms() - t0;
}

static int64_t one_request(const vigil_llm_config *cfg, const char *prompt, outcome *out)
{
    vigil_llm_client *c = vigil_llm_client_new(cfg);
    assert_non_null(c);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.user = prompt;
    req.want_json = true;
    memset(out, 0, sizeof *out);
    assert_int_equal(vigil_llm_submit(c, &req, out), 0);
    int64_t took = drain(c, cfg->concurrency, 20000);
    assert_true(out->done);
    assert_int_equal(out->calls, 1);
    vigil_llm_client_free(c);
    return took;
}

/* ------------------------------------------------------------------ */
/* Tests                                                              */
/* ------------------------------------------------------------------ */

static void ok_answer_with_usage_tokens(void **unused)
{
    (void)unused;
    vigil_llm_config cfg = test_config();
    snprintf(cfg.api_key, sizeof cfg.api_key, "sk-test-123");
    snprintf(cfg.model, sizeof cfg.model, "base-model");
    snprintf(cfg.model_tier[VIGIL_LLM_TIER_SMART], sizeof cfg.model_tier[0], "smart-model");
    double ok_before = vigil_metric_value("vigil_llm_requests_total", "status=\"ok\"");
    double prompt_before = vigil_metric_value("vigil_llm_tokens_total", "kind=\"prompt\"");
    double compl_before = vigil_metric_value("vigil_llm_tokens_total", "kind=\"completion\"");

    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.tier = VIGIL_LLM_TIER_SMART;
    req.system = "You decide whether a sleeping persona should wake.";
    req.user = "New message from human alice: Server is down, need help ASAP!";
    req.max_tokens = 200;
    req.temperature = 0.2;
    req.want_json = true;
    outcome out = {0};
    assert_int_equal(vigil_llm_submit(c, &req, &out), 0);
    assert_int_equal(vigil_llm_pending(c), 1);
    drain(c, cfg.concurrency, 10000);
    vigil_llm_client_free(c);

    assert_int_equal(out.status, VIGIL_LLM_OK);
    assert_int_equal(out.http_code, 200);
    assert_int_equal(out.attempts, 1);
    assert_string_equal(out.error, "");
    assert_string_equal(out.finish_reason, "stop");
    assert_false(out.truncated);
    assert_string_equal(out.model, "smart-model");
    assert_true(out.prompt_tokens > 0);
    assert_true(out.completion_tokens > 0);
    assert_int_equal(out.total_tokens, out.prompt_tokens + out.completion_tokens);
    assert_true(out.latency_ms >= 0 && out.latency_ms < 5000);

    /* The content is the model's JSON, readable with llm_parse. */
    json_object *ans = vigil_llm_extract_object(out.content, strlen(out.content), NULL);
    assert_non_null(ans);
    bool wake = false;
    double conf = 0;
    assert_int_equal(vigil_llm_read_bool(ans, "shouldWake", false, &wake), VIGIL_LLM_FIELD_OK);
    assert_true(wake);
    assert_int_equal(vigil_llm_read_confidence(ans, "confidence", 0, &conf), VIGIL_LLM_FIELD_OK);
    assert_true(conf > 0.8);
    json_object_put(ans);

    /* Metrics counted the request and its tokens. */
    assert_true(vigil_metric_value("vigil_llm_requests_total", "status=\"ok\"") == ok_before + 1);
    assert_true(vigil_metric_value("vigil_llm_tokens_total", "kind=\"prompt\"") ==
                prompt_before + (double)out.prompt_tokens);
    assert_true(vigil_metric_value("vigil_llm_tokens_total", "kind=\"completion\"") ==
                compl_before + (double)out.completion_tokens);

    /* What went over the wire. */
    json_object *stats = fake_http("/stats", NULL);
    assert_int_equal(stat_int(stats, "requests"), 1);
    json_object *last, *headers, *body, *v;
    assert_true(json_object_object_get_ex(stats, "last_request", &last));
    assert_true(json_object_object_get_ex(last, "headers", &headers));
    assert_true(json_object_object_get_ex(headers, "authorization", &v));
    assert_string_equal(json_object_get_string(v), "Bearer sk-test-123");
    assert_true(json_object_object_get_ex(headers, "content-type", &v));
    assert_string_equal(json_object_get_string(v), "application/json");
    assert_true(json_object_object_get_ex(last, "path", &v));
    assert_string_equal(json_object_get_string(v), "/v1/chat/completions");
    assert_true(json_object_object_get_ex(last, "body", &body));
    assert_true(json_object_object_get_ex(body, "model", &v));
    assert_string_equal(json_object_get_string(v), "smart-model");
    assert_true(json_object_object_get_ex(body, "max_tokens", &v));
    assert_int_equal(json_object_get_int(v), 200);
    assert_true(json_object_object_get_ex(body, "temperature", &v));
    assert_true(json_object_get_double(v) > 0.19 && json_object_get_double(v) < 0.21);
    assert_true(json_object_object_get_ex(body, "response_format", &v));
    assert_true(json_object_object_get_ex(v, "type", &v));
    assert_string_equal(json_object_get_string(v), "json_object");
    assert_true(json_object_object_get_ex(body, "messages", &v));
    assert_int_equal(json_object_array_length(v), 2);
    json_object *m0 = json_object_array_get_idx(v, 0), *role;
    assert_true(json_object_object_get_ex(m0, "role", &role));
    assert_string_equal(json_object_get_string(role), "system");
    json_object_put(stats);
}

static void casual_chatter_answer(void **unused)
{
    (void)unused;
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "How was your weekend?", &out);
    assert_int_equal(out.status, VIGIL_LLM_OK);
    json_object *ans = vigil_llm_extract_object(out.content, strlen(out.content), NULL);
    assert_non_null(ans);
    bool wake = true;
    assert_int_equal(vigil_llm_read_bool(ans, "shouldWake", true, &wake), VIGIL_LLM_FIELD_OK);
    assert_false(wake);
    json_object_put(ans);
}

static void server_error_then_success_on_retry(void **unused)
{
    (void)unused;
    control("{\"status\": 500, \"fail_next\": 1}");
    vigil_llm_config cfg = test_config();
    double retries_before = vigil_metric_value("vigil_llm_retries_total", NULL);
    outcome out;
    one_request(&cfg, "Server is down, need help ASAP!", &out);
    assert_int_equal(out.status, VIGIL_LLM_OK);
    assert_int_equal(out.attempts, 2);
    assert_int_equal(out.http_code, 200);
    assert_true(vigil_metric_value("vigil_llm_retries_total", NULL) == retries_before + 1);
    json_object *stats = fake_http("/stats", NULL);
    assert_int_equal(stat_int(stats, "requests"), 2);
    json_object_put(stats);
}

static void server_error_every_time_ends_http_error(void **unused)
{
    (void)unused;
    control("{\"status\": 503}");
    vigil_llm_config cfg = test_config();
    cfg.retries = 2;
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_HTTP_ERROR);
    assert_int_equal(out.http_code, 503);
    assert_int_equal(out.attempts, 3);
    assert_false(out.has_content);
    assert_non_null(strstr(out.error, "HTTP 503"));
}

static void client_error_is_not_retried(void **unused)
{
    (void)unused;
    control("{\"status\": 404}");
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_HTTP_ERROR);
    assert_int_equal(out.http_code, 404);
    assert_int_equal(out.attempts, 1);
}

static void rate_limited_honours_retry_after(void **unused)
{
    (void)unused;
    control("{\"status\": 429, \"retry_after\": 1, \"fail_next\": 1}");
    vigil_llm_config cfg = test_config();
    outcome out;
    int64_t took = one_request(&cfg, "Server is down, need help ASAP!", &out);
    assert_int_equal(out.status, VIGIL_LLM_OK);
    assert_int_equal(out.attempts, 2);
    /* the backoff alone would have been at most 20 ms */
    if (took < 1000 || out.latency_ms < 1000)
        fail_msg("retried after %lld ms, Retry-After said 1 s", (long long)took);
    assert_true(took < 5000);
}

static void retry_after_beyond_budget_ends_at_once(void **unused)
{
    (void)unused;
    control("{\"status\": 429, \"retry_after\": 30}");
    vigil_llm_config cfg = test_config();
    cfg.total_budget_ms = 3000;
    outcome out;
    int64_t took = one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_RATE_LIMITED);
    assert_int_equal(out.http_code, 429);
    assert_int_equal(out.attempts, 1);
    assert_non_null(strstr(out.error, "exceeds the budget"));
    assert_true(took < 1500);
}

static void closed_connection_is_retried_then_fails(void **unused)
{
    (void)unused;
    control("{\"mode\": \"close\"}");
    vigil_llm_config cfg = test_config();
    cfg.retries = 2;
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_true(out.status == VIGIL_LLM_CONNECT_ERROR || out.status == VIGIL_LLM_BAD_RESPONSE);
    assert_int_equal(out.attempts, 3);
    assert_int_equal(out.http_code, 0);
    assert_false(out.has_content);
    assert_true(out.error[0] != '\0');
    json_object *stats = fake_http("/stats", NULL);
    assert_true(stat_int(stats, "requests") >= 3);
    json_object_put(stats);
}

static void closed_once_then_ok(void **unused)
{
    (void)unused;
    control("{\"mode\": \"close\", \"fail_next\": 1}");
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_OK);
    assert_true(out.attempts >= 1 && out.attempts <= 2);
}

static void garbage_is_bad_response(void **unused)
{
    (void)unused;
    control("{\"mode\": \"garbage\"}");
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_BAD_RESPONSE);
    assert_int_equal(out.http_code, 200);
    assert_int_equal(out.attempts, 1);
    assert_false(out.has_content);
    assert_non_null(strstr(out.error, "not a JSON object"));
}

/* An answer holding a NUL would be read cut short by every consumer (they
 * take it as a C string): it is no usable answer. */
static void content_holding_a_nul_is_bad_response(void **unused)
{
    (void)unused;
    control("{\"rules\": [{\"reply\": \"note: keep\\u0000 the rest\"}]}");
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_BAD_RESPONSE);
    assert_int_equal(out.http_code, 200);
    assert_false(out.has_content);
    assert_non_null(strstr(out.error, "holds a NUL"));
}

static void error_under_200_is_an_error(void **unused)
{
    (void)unused;
    control("{\"mode\": \"error200\"}");
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_HTTP_ERROR);
    assert_int_equal(out.http_code, 200);
    assert_int_equal(out.attempts, 1);
    assert_non_null(strstr(out.error, "model runner crashed"));
}

static void truncated_output_is_reported(void **unused)
{
    (void)unused;
    control("{\"mode\": \"truncated\"}");
    vigil_llm_config cfg = test_config();
    outcome out;
    one_request(&cfg, "Server is down, need help ASAP!", &out);
    assert_int_equal(out.status, VIGIL_LLM_OK);
    assert_true(out.truncated);
    assert_string_equal(out.finish_reason, "length");
    assert_non_null(strstr(out.error, "truncated"));
    vigil_llm_parse_error perr;
    assert_null(vigil_llm_extract_object(out.content, strlen(out.content), &perr));
    assert_int_equal(perr.status, VIGIL_LLM_PARSE_UNBALANCED);
}

static void response_above_limit_is_bad_response(void **unused)
{
    (void)unused;
    vigil_llm_config cfg = test_config();
    cfg.max_response_bytes = 64;
    outcome out;
    one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_BAD_RESPONSE);
    assert_int_equal(out.attempts, 1);
    assert_non_null(strstr(out.error, "larger than 64"));
}

static void slow_answer_times_out(void **unused)
{
    (void)unused;
    control("{\"delay_ms\": 3000}");
    vigil_llm_config cfg = test_config();
    cfg.timeout_ms = 300;
    cfg.connect_timeout_ms = 300;
    cfg.retries = 1;
    double before = vigil_metric_value("vigil_llm_requests_total", "status=\"timeout\"");
    outcome out;
    int64_t took = one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_TIMEOUT);
    assert_int_equal(out.attempts, 2);
    assert_false(out.has_content);
    /* two attempts of 300 ms, not the server's 3 s */
    if (took < 550 || took > 2500)
        fail_msg("timed out after %lld ms", (long long)took);
    assert_true(vigil_metric_value("vigil_llm_requests_total", "status=\"timeout\"") ==
                before + 1);
    control("{\"delay_ms\": 0}");
}

/* A port nobody listens on: bind an ephemeral port, then close it. */
static int dead_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    return ntohs(a.sin_port);
}

static void connection_refused_fails_fast(void **unused)
{
    (void)unused;
    vigil_llm_config cfg = test_config();
    snprintf(cfg.url, sizeof cfg.url, "http://127.0.0.1:%d/v1/", dead_port());
    double before = vigil_metric_value("vigil_llm_requests_total", "status=\"connect_error\"");
    outcome out;
    int64_t took = one_request(&cfg, "anything", &out);
    assert_int_equal(out.status, VIGIL_LLM_CONNECT_ERROR);
    assert_int_equal(out.attempts, 3);
    assert_int_equal(out.http_code, 0);
    assert_true(took < 1000);
    assert_true(vigil_metric_value("vigil_llm_requests_total", "status=\"connect_error\"") ==
                before + 1);
}

static void disabled_client_uses_no_network(void **unused)
{
    (void)unused;
    vigil_llm_config cfg;
    vigil_llm_config_init(&cfg); /* empty URL */
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.user = "Server is down, need help ASAP!";
    outcome out = {0};
    double before = vigil_metric_value("vigil_llm_requests_total", "status=\"disabled\"");
    assert_int_equal(vigil_llm_submit(c, &req, &out), 0);
    assert_false(out.done); /* never called from submit */
    assert_true(vigil_metric_value("vigil_llm_requests_total", "status=\"disabled\"") ==
                before + 1);
    assert_int_equal(vigil_llm_pending(c), 1);
    int64_t t0 = vigil_mono_ms();
    assert_int_equal(vigil_llm_run(c, 1000, on_done), 1);
    assert_true(vigil_mono_ms() - t0 < 100);
    assert_true(out.done);
    assert_int_equal(out.status, VIGIL_LLM_DISABLED);
    assert_int_equal(out.attempts, 0);
    assert_false(out.has_content);
    assert_non_null(strstr(out.error, "VIGIL_LLM_URL"));
    assert_int_equal(vigil_llm_pending(c), 0);
    assert_int_equal(vigil_llm_run(c, 1000, on_done), 0); /* nothing pending: returns */
    vigil_llm_client_free(c);
    json_object *stats = fake_http("/stats", NULL);
    assert_int_equal(stat_int(stats, "requests"), 0);
    json_object_put(stats);
}

/* 50 requests of 300 ms each with 32 slots: two waves, well under the
 * 15 s a serial client would take. */
static void many_requests_run_concurrently(void **unused)
{
    (void)unused;
    control("{\"delay_ms\": 300}");
    vigil_llm_config cfg = test_config();
    cfg.concurrency = 32;
    enum { N = 50 };
    static outcome outs[N];
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    char prompts[N][64];
    for (int i = 0; i < N; i++) {
        memset(&outs[i], 0, sizeof outs[i]);
        snprintf(prompts[i], sizeof prompts[i], "%s #%d",
                 i % 2 ? "How was your weekend?" : "Emergency in prod", i);
        vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
        req.user = prompts[i];
        assert_int_equal(vigil_llm_submit(c, &req, &outs[i]), 0);
    }
    int64_t took = drain(c, cfg.concurrency, 10000);
    vigil_llm_client_free(c);
    for (int i = 0; i < N; i++) {
        assert_int_equal(outs[i].calls, 1);
        assert_int_equal(outs[i].status, VIGIL_LLM_OK);
        assert_non_null(strstr(outs[i].content, i % 2 ? "casual chatter" : "urgent"));
    }
    json_object *stats = fake_http("/stats", NULL);
    int64_t maxc = stat_int(stats, "max_concurrent");
    assert_int_equal(stat_int(stats, "requests"), N);
    json_object_put(stats);
    print_message("50 x 300 ms requests: %lld ms wall, %lld concurrent at the server\n",
                  (long long)took, (long long)maxc);
    assert_true(maxc > 1);
    assert_true(maxc <= 32);
    assert_true(took < 3000);
    control("{\"delay_ms\": 0}");
}

/* With 4 slots, 12 requests of 200 ms queue in three waves. */
static void concurrency_cap_queues_the_rest(void **unused)
{
    (void)unused;
    control("{\"delay_ms\": 200}");
    vigil_llm_config cfg = test_config();
    cfg.concurrency = 4;
    enum { N = 12 };
    static outcome outs[N];
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    for (int i = 0; i < N; i++) {
        memset(&outs[i], 0, sizeof outs[i]);
        vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
        req.user = "hello";
        assert_int_equal(vigil_llm_submit(c, &req, &outs[i]), 0);
    }
    int64_t took = drain(c, cfg.concurrency, 10000);
    vigil_llm_client_free(c);
    for (int i = 0; i < N; i++)
        assert_int_equal(outs[i].status, VIGIL_LLM_OK);
    json_object *stats = fake_http("/stats", NULL);
    int64_t maxc = stat_int(stats, "max_concurrent");
    json_object_put(stats);
    assert_true(maxc >= 2 && maxc <= 4);
    assert_true(took >= 550); /* three waves of 200 ms */
    control("{\"delay_ms\": 0}");
}

/* A request waiting out a Retry-After does not hold up the others: the
 * wait is a not-before time in the queue, not a sleep. */
static void waiting_retry_does_not_block_others(void **unused)
{
    (void)unused;
    control("{\"rules\": [{\"match\": \"ratelimit-me\", \"status\": 429, "
            "\"retry_after\": 1}, {\"reply\": {\"shouldWake\": false}}]}");
    vigil_llm_config cfg = test_config();
    cfg.retries = 1;
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    outcome limited = {0}, quick[3];
    memset(quick, 0, sizeof quick);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.user = "ratelimit-me";
    assert_int_equal(vigil_llm_submit(c, &req, &limited), 0);
    /* let the first 429 arrive, then submit more while it waits */
    int64_t t0 = vigil_mono_ms();
    while (vigil_llm_in_flight(c) > 0 && vigil_mono_ms() - t0 < 2000)
        assert_int_equal(vigil_llm_run(c, 20, on_done), 0);
    assert_int_equal(vigil_llm_in_flight(c), 0);
    assert_int_equal(vigil_llm_pending(c), 1);
    for (int i = 0; i < 3; i++) {
        req.user = "hello";
        assert_int_equal(vigil_llm_submit(c, &req, &quick[i]), 0);
    }
    int64_t t1 = vigil_mono_ms();
    while ((!quick[0].done || !quick[1].done || !quick[2].done) && vigil_mono_ms() - t1 < 3000)
        assert_true(vigil_llm_run(c, 100, on_done) >= 0);
    int64_t quick_ms = vigil_mono_ms() - t1;
    assert_false(limited.done);
    for (int i = 0; i < 3; i++)
        assert_int_equal(quick[i].status, VIGIL_LLM_OK);
    assert_true(quick_ms < 700);
    drain(c, cfg.concurrency, 5000);
    assert_int_equal(limited.status, VIGIL_LLM_RATE_LIMITED);
    assert_int_equal(limited.attempts, 2);
    assert_true(limited.latency_ms >= 1000);
    vigil_llm_client_free(c);
    control("{\"rules\": null}");
}

/* A completion callback may submit more work (a follow-up call). */
static outcome g_chain[2];
static vigil_llm_client *g_chain_client;

static void chain_done(const vigil_llm_result *r, void *user)
{
    on_done(r, user);
    if (user == &g_chain[0]) {
        vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
        req.user = "follow-up";
        assert_int_equal(vigil_llm_submit(g_chain_client, &req, &g_chain[1]), 0);
    }
}

static void callback_may_submit(void **unused)
{
    (void)unused;
    vigil_llm_config cfg = test_config();
    g_chain_client = vigil_llm_client_new(&cfg);
    assert_non_null(g_chain_client);
    memset(g_chain, 0, sizeof g_chain);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.user = "first";
    assert_int_equal(vigil_llm_submit(g_chain_client, &req, &g_chain[0]), 0);
    int64_t t0 = vigil_mono_ms();
    while (vigil_llm_pending(g_chain_client) > 0 && vigil_mono_ms() - t0 < 10000)
        assert_true(vigil_llm_run(g_chain_client, 100, chain_done) >= 0);
    assert_int_equal(g_chain[0].status, VIGIL_LLM_OK);
    assert_int_equal(g_chain[1].status, VIGIL_LLM_OK);
    vigil_llm_client_free(g_chain_client);
}

/* Freeing with requests in flight abandons them cleanly (ASan/LSan). */
static void free_with_requests_in_flight(void **unused)
{
    (void)unused;
    control("{\"delay_ms\": 500}");
    vigil_llm_config cfg = test_config();
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    outcome outs[3];
    memset(outs, 0, sizeof outs);
    for (int i = 0; i < 3; i++) {
        vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
        req.user = "slow";
        assert_int_equal(vigil_llm_submit(c, &req, &outs[i]), 0);
    }
    assert_int_equal(vigil_llm_run(c, 100, on_done), 0);
    assert_int_equal(vigil_llm_in_flight(c), 3);
    vigil_llm_client_free(c);
    for (int i = 0; i < 3; i++)
        assert_false(outs[i].done);
    control("{\"delay_ms\": 0}");
}

static void submit_rejects_missing_prompt(void **unused)
{
    (void)unused;
    vigil_llm_config cfg = test_config();
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    assert_int_equal(vigil_llm_submit(c, &req, NULL), -1);
    assert_int_equal(vigil_llm_submit(c, NULL, NULL), -1);
    assert_int_equal(vigil_llm_pending(c), 0);
    vigil_llm_client_free(c);
    vigil_llm_client_free(NULL);
}

/* ------------------------------------------------------------------ */
/* Config and body (no network)                                       */
/* ------------------------------------------------------------------ */

static void config_defaults_and_environment(void **unused)
{
    (void)unused;
    static const char *const vars[] = {
        "VIGIL_LLM_URL", "VIGIL_LLM_API_KEY", "VIGIL_LLM_API_KEY_FILE", "VIGIL_LLM_MODEL",
        "VIGIL_LLM_MODEL_SMART", "VIGIL_LLM_MODEL_MID", "VIGIL_LLM_MODEL_FAST",
        "VIGIL_LLM_TIMEOUT_MS", "VIGIL_LLM_CONCURRENCY", "VIGIL_LLM_RETRIES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    char err[256] = "";
    vigil_llm_config c;
    vigil_llm_config_init(&c);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.url, "");
    assert_int_equal(c.timeout_ms, 10000);
    assert_int_equal(c.concurrency, 32);
    assert_int_equal(c.retries, 2);
    assert_int_equal(vigil_llm_config_budget_ms(&c), 10000 * 3 + 500 + 1000);

    setenv("VIGIL_LLM_URL", "http://127.0.0.1:11434/v1/", 1);
    setenv("VIGIL_LLM_API_KEY", "k", 1);
    setenv("VIGIL_LLM_MODEL", "llama3", 1);
    setenv("VIGIL_LLM_MODEL_FAST", "qwen2:0.5b", 1);
    setenv("VIGIL_LLM_TIMEOUT_MS", "2500", 1);
    setenv("VIGIL_LLM_CONCURRENCY", "8", 1);
    setenv("VIGIL_LLM_RETRIES", "0", 1);
    vigil_llm_config_init(&c);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), 0);
    assert_string_equal(c.url, "http://127.0.0.1:11434/v1");
    assert_string_equal(c.api_key, "k");
    assert_string_equal(vigil_llm_config_model(&c, VIGIL_LLM_TIER_SMART), "llama3");
    assert_string_equal(vigil_llm_config_model(&c, VIGIL_LLM_TIER_MID), "llama3");
    assert_string_equal(vigil_llm_config_model(&c, VIGIL_LLM_TIER_FAST), "qwen2:0.5b");
    assert_int_equal(c.timeout_ms, 2500);
    assert_int_equal(c.concurrency, 8);
    assert_int_equal(c.retries, 0);
    assert_int_equal(vigil_llm_config_budget_ms(&c), 2500);

    setenv("VIGIL_LLM_CONCURRENCY", "zero", 1);
    vigil_llm_config_init(&c);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "VIGIL_LLM_CONCURRENCY"));
    setenv("VIGIL_LLM_CONCURRENCY", "0", 1);
    assert_int_equal(vigil_llm_config_load(&c, err, sizeof err), -1);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);

    /* the --help table names every variable */
    size_t n = 0;
    for (const vigil_config_var *v = VIGIL_LLM_VARS; v->name; v++, n++)
        assert_non_null(v->help);
    assert_int_equal(n, sizeof vars / sizeof vars[0]);
    assert_string_equal(vigil_llm_status_name(VIGIL_LLM_RATE_LIMITED), "rate_limited");
    assert_string_equal(vigil_llm_status_name(VIGIL_LLM_DISABLED), "disabled");
}

static void request_body_is_exact(void **unused)
{
    (void)unused;
    vigil_llm_config c;
    vigil_llm_config_init(&c);
    snprintf(c.model, sizeof c.model, "m");
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.system = "sys \"quoted\"";
    req.user = "hi / there\n";
    req.max_tokens = 150;
    req.temperature = 0.2;
    req.want_json = true;
    char *b = vigil_llm_build_body(&c, &req);
    assert_non_null(b);
    assert_string_equal(
        b, "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"sys \\\"quoted\\\"\"},"
           "{\"role\":\"user\",\"content\":\"hi / there\\n\"}],\"max_tokens\":150,"
           "\"temperature\":0.2,\"response_format\":{\"type\":\"json_object\"},\"stream\":false}");
    free(b);
    /* no model, no system, defaults: only what is set is sent */
    vigil_llm_config_init(&c);
    vigil_llm_request bare = VIGIL_LLM_REQUEST_INIT;
    bare.user = "x";
    b = vigil_llm_build_body(&c, &bare);
    assert_non_null(b);
    assert_string_equal(
        b, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":false}");
    free(b);
    assert_null(vigil_llm_build_body(&c, &(vigil_llm_request)VIGIL_LLM_REQUEST_INIT));
}

/* Usage counts an endpoint reports are capped at a billion each: they are
 * summed over retries and over a room's life, and 9e18 would overflow. */
static void huge_usage_counts_are_capped(void **unused)
{
    (void)unused;
    control("{\"usage\": {\"prompt_tokens\": 9223372036854775807, "
            "\"completion_tokens\": 9223372036854775807}}");
    vigil_llm_config cfg = test_config();
    vigil_llm_client *c = vigil_llm_client_new(&cfg);
    assert_non_null(c);
    vigil_llm_request req = VIGIL_LLM_REQUEST_INIT;
    req.system = "s";
    req.user = "u";
    outcome out = {0};
    assert_int_equal(vigil_llm_submit(c, &req, &out), 0);
    drain(c, cfg.concurrency, 10000);
    vigil_llm_client_free(c);
    assert_int_equal(out.status, VIGIL_LLM_OK);
    assert_int_equal(out.prompt_tokens, 1000000000);
    assert_int_equal(out.completion_tokens, 1000000000);
    assert_int_equal(out.total_tokens, 2000000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_defaults_and_environment),
        cmocka_unit_test(request_body_is_exact),
        cmocka_unit_test_setup(ok_answer_with_usage_tokens, reset_server),
        cmocka_unit_test_setup(huge_usage_counts_are_capped, reset_server),
        cmocka_unit_test_setup(casual_chatter_answer, reset_server),
        cmocka_unit_test_setup(server_error_then_success_on_retry, reset_server),
        cmocka_unit_test_setup(server_error_every_time_ends_http_error, reset_server),
        cmocka_unit_test_setup(client_error_is_not_retried, reset_server),
        cmocka_unit_test_setup(rate_limited_honours_retry_after, reset_server),
        cmocka_unit_test_setup(retry_after_beyond_budget_ends_at_once, reset_server),
        cmocka_unit_test_setup(closed_connection_is_retried_then_fails, reset_server),
        cmocka_unit_test_setup(closed_once_then_ok, reset_server),
        cmocka_unit_test_setup(garbage_is_bad_response, reset_server),
        cmocka_unit_test_setup(content_holding_a_nul_is_bad_response, reset_server),
        cmocka_unit_test_setup(error_under_200_is_an_error, reset_server),
        cmocka_unit_test_setup(truncated_output_is_reported, reset_server),
        cmocka_unit_test_setup(response_above_limit_is_bad_response, reset_server),
        cmocka_unit_test_setup(connection_refused_fails_fast, reset_server),
        cmocka_unit_test_setup(disabled_client_uses_no_network, reset_server),
        cmocka_unit_test_setup(many_requests_run_concurrently, reset_server),
        cmocka_unit_test_setup(concurrency_cap_queues_the_rest, reset_server),
        cmocka_unit_test_setup(waiting_retry_does_not_block_others, reset_server),
        cmocka_unit_test_setup(callback_may_submit, reset_server),
        cmocka_unit_test_setup(submit_rejects_missing_prompt, reset_server),
        cmocka_unit_test_setup(free_with_requests_in_flight, reset_server),
        cmocka_unit_test_setup(slow_answer_times_out, reset_server),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
