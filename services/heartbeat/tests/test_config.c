/* heartbeat/{p}/config payloads: every field checked, with the reason a
 * bad one is refused. */
#include "hb_test.h"

#define BASE "\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"general\""

static hb_cfg_status status(const char *json)
{
    hb_config c;
    test_config(&c);
    char err[200] = "";
    hb_cfg_status st = parse_cfg_status(&c, json, err, sizeof err);
    if (st != HB_CFG_OK)
        assert_true(err[0] != '\0'); /* a refusal always says why */
    return st;
}

static void accepted_forms(void **st)
{
    (void)st;
    hb_config c;
    test_config(&c);
    hb_persona_cfg cfg;
    parse_cfg(&c, "{" BASE ",\"enabled\":true}", &cfg);
    assert_string_equal(cfg.checklist, HB_DEFAULT_CHECKLIST); /* the default HEARTBEAT.md */
    assert_int_equal(cfg.allow, HB_ALLOW_ALL);
    assert_false(cfg.quiet.set);
    assert_string_equal(cfg.tz, "");
    hb_persona_cfg_clear(&cfg);
    parse_cfg(&c, "{" BASE ",\"enabled\":false,\"quiet_hours\":\"22:00-07:00\",\"timezone\":\"Europe/Berlin\","
                  "\"allow_proactive\":[\"reminder\",\"check-in\"],\"checklist\":\"\"}", &cfg);
    assert_false(cfg.enabled);
    assert_int_equal(cfg.quiet.start_min, 22 * 60);
    assert_int_equal(cfg.quiet.end_min, 7 * 60);
    assert_string_equal(cfg.tz, "Europe/Berlin");
    assert_true(hb_permitted(cfg.allow, HB_CAT_CHECK_IN));
    assert_false(hb_permitted(cfg.allow, HB_CAT_ALERT));
    assert_string_equal(cfg.checklist, "");
    hb_persona_cfg_clear(&cfg);
    /* quiet_hours' own zone wins over `timezone` */
    parse_cfg(&c, "{" BASE ",\"enabled\":true,\"timezone\":\"UTC\",\"quiet_hours\":{\"start\":\"23:00\","
                  "\"end\":\"06:30\",\"timezone\":\"Asia/Jakarta\"}}", &cfg);
    assert_string_equal(cfg.tz, "Asia/Jakarta");
    assert_int_equal(cfg.quiet.end_min, 6 * 60 + 30);
    hb_persona_cfg_clear(&cfg);
    /* true: the night, 22:00-07:00; false: none at all, as when absent */
    parse_cfg(&c, "{" BASE ",\"enabled\":true,\"quiet_hours\":false}", &cfg);
    assert_false(hb_quiet_contains(&cfg.quiet, 3 * 60));
    hb_persona_cfg_clear(&cfg);
    parse_cfg(&c, "{" BASE ",\"enabled\":true,\"quiet_hours\":true}", &cfg);
    assert_true(cfg.quiet.set);
    assert_int_equal(cfg.quiet.start_min, 22 * 60);
    assert_int_equal(cfg.quiet.end_min, 7 * 60);
    assert_true(hb_quiet_contains(&cfg.quiet, 3 * 60));
    assert_false(hb_quiet_contains(&cfg.quiet, 12 * 60));
    hb_persona_cfg_clear(&cfg);
    parse_cfg(&c, "{" BASE ",\"enabled\":true}", &cfg);
    assert_false(hb_quiet_contains(&cfg.quiet, 3 * 60));
    hb_persona_cfg_clear(&cfg);
}

static void refused_with_the_reason(void **st)
{
    (void)st;
    assert_int_equal(status("{\"persona\":\"helper\",\"room\":\"general\",\"enabled\":true}"), HB_CFG_MISSING);
    assert_int_equal(status("{" BASE "}"), HB_CFG_MISSING);
    assert_int_equal(status("{" BASE ",\"enabled\":\"yes\"}"), HB_CFG_WRONG_TYPE);
    assert_int_equal(status("{\"persona\":\"helper\",\"user\":\"jo el\",\"room\":\"general\",\"enabled\":true}"),
                     HB_CFG_BAD_ID);
    assert_int_equal(status("{\"persona\":\"helper\",\"user\":\"joel\",\"room\":\"a/b\",\"enabled\":true}"),
                     HB_CFG_BAD_ID);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"checklist\":5}"), HB_CFG_WRONG_TYPE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"quiet_hours\":\"22:00 to 07:00\"}"), HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"quiet_hours\":{\"start\":\"22:00\"}}"), HB_CFG_MISSING);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"quiet_hours\":{\"start\":\"22:00\",\"end\":\"7\"}}"),
                     HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"quiet_hours\":7}"), HB_CFG_WRONG_TYPE);
    /* a window from a time to itself: neither none nor the whole day */
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"quiet_hours\":\"22:00-22:00\"}"),
                     HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"quiet_hours\":{\"start\":\"07:00\","
                            "\"end\":\"07:00\"}}"),
                     HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"timezone\":\"Mars/Olympus\"}"), HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"timezone\":\"../../etc/passwd\"}"), HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"allow_proactive\":\"all\"}"), HB_CFG_WRONG_TYPE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"allow_proactive\":[\"gossip\"]}"), HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"allow_proactive\":[1]}"), HB_CFG_WRONG_TYPE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"model\":\"\"}"), HB_CFG_BAD_VALUE);
    assert_int_equal(status("{" BASE ",\"enabled\":true,\"model\":3}"), HB_CFG_WRONG_TYPE);
    char big[HB_CHECKLIST_MAX + 200];
    snprintf(big, sizeof big, "{" BASE ",\"enabled\":true,\"checklist\":\"");
    size_t n = strlen(big);
    memset(big + n, 'x', HB_CHECKLIST_MAX + 1);
    strcpy(big + n + HB_CHECKLIST_MAX + 1, "\"}");
    assert_int_equal(status(big), HB_CFG_BAD_VALUE);
}

/* A NUL inside a string (\u0000) would cut the value short where it is
 * read as a C string: refused, naming the field, as libshared refuses it in
 * every other input. */
static void a_nul_in_any_string_is_refused(void **st)
{
    (void)st;
    static const char *const bodies[] = {
        "{" BASE ",\"enabled\":true,\"checklist\":\"a\\u0000HEARTBEAT_OK\"}",
        "{" BASE ",\"enabled\":true,\"identity\":\"me\\u0000x\"}",
        "{" BASE ",\"enabled\":true,\"model\":\"m\\u0000x\"}",
        "{" BASE ",\"enabled\":true,\"timezone\":\"Asia/Jakarta\\u0000x\"}",
        "{" BASE ",\"enabled\":true,\"quiet_hours\":\"22:00-07:00\\u0000x\"}",
        "{" BASE ",\"enabled\":true,\"quiet_hours\":{\"start\":\"22:00\\u0000\",\"end\":\"07:00\"}}",
        "{" BASE ",\"enabled\":true,\"allow_proactive\":[\"reminder\\u0000x\"]}",
    };
    static const char *const fields[] = {"checklist", "identity", "model", "timezone",
                                         "quiet_hours", "start", "allow_proactive[0]"};
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        hb_config c;
        test_config(&c);
        char err[200] = "", want[80];
        assert_int_equal(parse_cfg_status(&c, bodies[i], err, sizeof err), HB_CFG_BAD_VALUE);
        snprintf(want, sizeof want, "field '%s': string contains NUL", fields[i]);
        assert_non_null(strstr(err, want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepted_forms),
        cmocka_unit_test(refused_with_the_reason),
        cmocka_unit_test(a_nul_in_any_string_is_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_zones_free();
    return rc;
}
