/* The room record in parts (record_parts.c, state_json.c): what a commit
 * writes of the personas, the head, and reading the whole record back in
 * the form the store hands it over (head + "parts"). */
#include "dm_test.h"
#include "step.h"

/* A room of n personas p0..p(n-1), as the shell has it after a write. */
static dormancy_room *room_of(int n)
{
    dormancy_room *r = dormancy_room_new("general");
    assert_non_null(r);
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        assert_non_null(room_persona_append(r, id, T0));
    }
    return r;
}

static void written(dormancy_room *r, dormancy_parts_diff *d)
{
    dormancy_parts_diff_free(d);
    dormancy_parts_written(r);
}

/* The whole record as the store assembles it: the head with "parts", in
 * the hash's order (here reversed: it is not the arrival order). */
static char *assembled(dormancy_room *r)
{
    char *head = dormancy_room_head_json(r);
    assert_non_null(head);
    size_t cap = strlen(head) + 64 + (size_t)r->n_personas * 512, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    n = (size_t)snprintf(s, cap, "%.*s,\"parts\":{", (int)strlen(head) - 1, head);
    for (int i = r->n_personas - 1; i >= 0; i--) {
        char *t = dormancy_persona_record_text(&r->personas[i]);
        assert_non_null(t);
        n += (size_t)snprintf(s + n, cap - n, "%s\"%s\":%s", i < r->n_personas - 1 ? "," : "",
                              r->personas[i].id, t);
        free(t);
    }
    snprintf(s + n, cap - n, "}}");
    free(head);
    return s;
}

static void a_new_room_writes_its_personas_then_only_the_changed_one(void **state)
{
    (void)state;
    dormancy_room *r = room_of(3);
    dormancy_parts_diff d;
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_false(d.whole); /* a new room: nothing stored, nothing to reset */
    assert_int_equal(d.n_set, 3);
    assert_int_equal(d.n_removed, 0);
    written(r, &d);

    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_int_equal(d.n_set, 0); /* nothing changed */
    written(r, &d);

    persona_touch(&r->personas[1]);
    r->personas[1].level = DORMANCY_SLEEP;
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_int_equal(d.n_set, 1);
    assert_int_equal(d.set[0], 1);
    assert_non_null(strstr(d.text[0], "\"id\":\"p1\""));
    assert_non_null(strstr(d.text[0], "\"level\":\"sleep\""));
    written(r, &d);
    dormancy_room_free(r);
}

static void a_persona_that_left_is_deleted_and_one_that_joins_written(void **state)
{
    (void)state;
    dormancy_room *r = room_of(4);
    dormancy_parts_diff d;
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    written(r, &d);

    room_persona_remove(r, 1); /* p1 leaves: p2 and p3 move up */
    assert_non_null(room_persona_append(r, "q", T0));
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_false(d.whole);
    assert_int_equal(d.n_removed, 1);
    assert_string_equal(d.removed[0], "p1");
    bool q = false;
    for (int i = 0; i < d.n_set; i++)
        q |= strcmp(r->personas[d.set[i]].id, "q") == 0;
    assert_true(q);
    written(r, &d);

    /* the last one leaves: deleted, nothing else written */
    room_persona_remove(r, r->n_personas - 1);
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_int_equal(d.n_removed, 1);
    assert_string_equal(d.removed[0], "q");
    assert_int_equal(d.n_set, 0);
    written(r, &d);

    /* and back, unchanged: written again (its part was deleted) */
    assert_non_null(room_persona_append(r, "q", T0));
    r->personas[r->n_personas - 1].ord = 4;
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_int_equal(d.n_set, 1);
    written(r, &d);
    dormancy_room_free(r);
}

/* Read whole from the store's form: arrival order kept (the store's field
 * order is not), texts primed so that the next commit writes nothing it
 * does not change. A copy knows nothing of what is stored: all again. */
static void read_back_from_parts_in_order_and_only_changes_written(void **state)
{
    (void)state;
    dormancy_room *r = room_of(5);
    room_persona_remove(r, 0);
    r->token = 0x1234;
    char *whole = assembled(r);
    char err[200];
    bool head_only = true;
    dormancy_room *back = dormancy_room_read(whole, "general", &head_only, err, sizeof err);
    assert_non_null(back);
    assert_false(head_only);
    assert_int_equal(back->n_personas, 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(back->personas[i].id, r->personas[i].id);
    assert_int_equal(back->next_ord, 5);
    assert_int_equal(back->token, 0x1234);
    dormancy_parts_diff d;
    assert_int_equal(dormancy_parts_diff_make(back, &d), 0);
    assert_false(d.whole);
    assert_int_equal(d.n_set + d.n_removed, 0);
    written(back, &d);

    dormancy_room *copy = dormancy_room_clone(back);
    assert_int_equal(dormancy_parts_diff_make(copy, &d), 0);
    assert_true(d.whole);
    assert_int_equal(d.n_set, 4);
    written(copy, &d);

    /* the one-text form with a record written before the order was kept */
    dormancy_room *old = dormancy_room_read(
        "{\"v\":1,\"room\":\"general\",\"personas\":[{\"id\":\"b\"},{\"id\":\"a\"}]}", "general",
        &head_only, err, sizeof err);
    assert_non_null(old);
    assert_string_equal(old->personas[0].id, "b");
    assert_int_equal(old->personas[1].ord, 1);
    assert_int_equal(old->next_ord, 2);
    assert_int_equal(dormancy_parts_diff_make(old, &d), 0);
    assert_true(d.whole);
    written(old, &d);

    dormancy_room_free(old);
    dormancy_room_free(copy);
    dormancy_room_free(back);
    dormancy_room_free(r);
    free(whole);
}

/* A room deleted by control: every stored persona part is deleted. */
static void a_deleted_room_deletes_every_part(void **state)
{
    (void)state;
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bo", "cy");
    dormancy_room *r = f->room;
    dormancy_parts_diff d;
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    written(r, &d);
    dormancy_event ev = {.kind = DORMANCY_EV_CONTROL, .id = "del-1", .ts = f->now};
    ev.control.action = DORMANCY_CTL_DELETE;
    dormancy_ids ids = {dm_make_id, f};
    dormancy_actions a;
    dormancy_actions_init(&a);
    assert_int_equal(dormancy_room_apply(r, &ev, &f->cfg, f->now, &ids, &a), 0);
    dormancy_actions_free(&a);
    assert_int_equal(r->n_personas, 0);
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_int_equal(d.n_removed, 3);
    assert_int_equal(d.n_set, 0);
    written(r, &d);
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_int_equal(d.n_removed + d.n_set, 0);
    written(r, &d);
    dm_free(f);
}

/* Actions that start in the caller's storage (dormancy_actions_init_in)
 * and outgrow it move to the heap whole: the same actions, in order, as
 * a heap vector gets; the storage itself is never freed (ASan would
 * report freeing a stack address). */
static void actions_outgrow_the_callers_storage_intact(void **state)
{
    (void)state;
    for (size_t inline_n = 1; inline_n <= 4; inline_n++) {
        dormancy_action storage[4];
        dormancy_actions a;
        dormancy_actions_init_in(&a, storage, inline_n);
        dormancy_step s = {.out = &a};
        for (int i = 0; i < 40; i++) {
            char name[16];
            snprintf(name, sizeof name, "p%d", i);
            dormancy_action *x = step_push(&s, DORMANCY_OUT_TIMER_SET, name);
            assert_non_null(x);
            x->due = i;
            assert_int_equal(a.v == storage, (size_t)i < inline_n);
        }
        assert_false(s.failed);
        assert_int_equal(a.n, 40);
        for (int i = 0; i < 40; i++) {
            char name[16];
            snprintf(name, sizeof name, "p%d", i);
            assert_string_equal(a.v[i].persona, name);
            assert_int_equal(a.v[i].due, i);
        }
        dormancy_actions_free(&a);
    }

    /* A whole step: the same actions from two actions of storage as
     * from none. */
    dm_fx *f = dm_new();
    dm_personas(f, 3, "ann", "bo", "cy");
    dormancy_room *twin = dormancy_room_clone(f->room);
    assert_non_null(twin);
    dormancy_event ev = {.kind = DORMANCY_EV_CONTROL, .id = "del-2", .ts = f->now};
    ev.control.action = DORMANCY_CTL_DELETE;
    dormancy_ids ids = {dm_make_id, f};
    dormancy_actions heap, small;
    dormancy_action two[2];
    dormancy_actions_init(&heap);
    dormancy_actions_init_in(&small, two, 2);
    assert_int_equal(dormancy_room_apply(f->room, &ev, &f->cfg, f->now, &ids, &heap), 0);
    assert_int_equal(dormancy_room_apply(twin, &ev, &f->cfg, f->now, &ids, &small), 0);
    assert_true(heap.n > 2);
    assert_int_equal(small.n, heap.n);
    for (size_t i = 0; i < heap.n; i++) {
        assert_int_equal(small.v[i].kind, heap.v[i].kind);
        assert_string_equal(small.v[i].persona, heap.v[i].persona);
        assert_string_equal(small.v[i].text, heap.v[i].text);
    }
    dormancy_actions_free(&heap);
    dormancy_actions_free(&small);
    dormancy_room_free(twin);
    dm_free(f);
}

/* One meta step on r, written as the service writes it; the parts it
 * set and removed. */
static void meta_step(dormancy_room *r, const dormancy_event *ev, int *set, int *removed,
                      size_t *actions)
{
    dormancy_config cfg;
    dormancy_config_init(&cfg);
    dormancy_actions a;
    dormancy_actions_init(&a);
    assert_int_equal(dormancy_room_apply(r, ev, &cfg, T0, NULL, &a), 0);
    *actions = a.n;
    dormancy_actions_free(&a);
    dormancy_parts_diff d;
    assert_int_equal(dormancy_parts_diff_make(r, &d), 0);
    assert_false(d.whole);
    *set = d.n_set;
    *removed = d.n_removed;
    written(r, &d);
}

/* A meta that changes nothing of a persona writes nothing: the same meta
 * again, or a cleared meta (the meta that says nothing) applied twice, as
 * a clear redelivered after its commit is (it has no id to deduplicate). */
static void a_meta_that_changes_nothing_writes_nothing(void **state)
{
    (void)state;
    dormancy_room *r = room_of(0);
    static const char *const rooms[] = {"general"};
    dormancy_event ev = {.kind = DORMANCY_EV_META, .id = "m1", .ts = T0};
    ev.meta.persona = "ann";
    ev.meta.name = "Annie";
    ev.meta.rooms = rooms;
    ev.meta.n_rooms = 1;
    ev.meta.ov.has = VIGIL_OV_NO_HUMAN;
    ev.meta.ov.no_human_ms = 60000;
    int set, removed;
    size_t n;
    meta_step(r, &ev, &set, &removed, &n);
    assert_int_equal(set, 1); /* ann joined */
    meta_step(r, &ev, &set, &removed, &n);
    assert_int_equal(set, 0);

    r->personas[0].joined = true; /* ann spoke: she stays when her meta goes */
    persona_touch(&r->personas[0]);
    vigil_persona_meta m;
    vigil_persona_meta_init(&m);
    dormancy_event clear = {.kind = DORMANCY_EV_META, .id = "meta-clear.ann.1", .ts = T0};
    clear.meta.persona = "ann";
    clear.meta.ov = m.dormancy;
    meta_step(r, &clear, &set, &removed, &n);
    assert_int_equal(set, 1);
    assert_false(r->personas[0].via_meta);
    assert_int_equal(r->personas[0].ov.has, 0);
    char *head = dormancy_room_head_json(r);
    meta_step(r, &clear, &set, &removed, &n);
    assert_int_equal(set, 0);
    assert_int_equal(removed, 0);
    assert_int_equal(n, 0);
    char *again = dormancy_room_head_json(r);
    assert_string_equal(head, again);
    free(head);
    free(again);
    dormancy_room_free(r);
}

static void a_head_alone_is_not_a_record(void **state)
{
    (void)state;
    dormancy_room *r = room_of(2);
    char *head = dormancy_room_head_json(r);
    assert_null(strstr(head, "\"personas\""));
    assert_non_null(strstr(head, "\"np\":2"));
    char err[200];
    bool head_only = false;
    assert_null(dormancy_room_read(head, "general", &head_only, err, sizeof err));
    assert_true(head_only);
    assert_null(dormancy_room_from_json(head, "general", err, sizeof err));
    free(head);
    dormancy_room_free(r);

    /* a room without personas: its head is the whole record */
    r = dormancy_room_new("general");
    r->first_seen = T0;
    head = dormancy_room_head_json(r);
    dormancy_room *back = dormancy_room_read(head, "general", &head_only, err, sizeof err);
    assert_non_null(back);
    assert_false(head_only);
    assert_int_equal(back->first_seen, T0);
    dormancy_room_free(back);
    free(head);
    dormancy_room_free(r);
}

/* A head retokened in place is the head written with that token; any
 * other text is left alone. */
static void a_head_retokened_in_place_is_the_head_written_with_that_token(void **state)
{
    (void)state;
    dormancy_room *r = room_of(3);
    r->token = 0x1234;
    char *head = dormancy_room_head_json(r);
    r->token = 0xfedcba9876543210ULL;
    char *want = dormancy_room_head_json(r);
    assert_string_not_equal(head, want);
    assert_true(dormancy_room_head_retoken(head, r->token));
    assert_string_equal(head, want);
    free(want);
    free(head);
    dormancy_room_free(r);

    char other[] = "{\"v\":3,\"c\":\"00000000000000ff\",\"np\":1}";
    assert_false(dormancy_room_head_retoken(other, 1));
    assert_string_equal(other, "{\"v\":3,\"c\":\"00000000000000ff\",\"np\":1}");
    char shortc[] = ",\"c\":\"ff\"}";
    assert_false(dormancy_room_head_retoken(shortc, 1));
    assert_false(dormancy_room_head_retoken(NULL, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_new_room_writes_its_personas_then_only_the_changed_one),
        cmocka_unit_test(a_persona_that_left_is_deleted_and_one_that_joins_written),
        cmocka_unit_test(read_back_from_parts_in_order_and_only_changes_written),
        cmocka_unit_test(a_deleted_room_deletes_every_part),
        cmocka_unit_test(actions_outgrow_the_callers_storage_intact),
        cmocka_unit_test(a_meta_that_changes_nothing_writes_nothing),
        cmocka_unit_test(a_head_alone_is_not_a_record),
        cmocka_unit_test(a_head_retokened_in_place_is_the_head_written_with_that_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
