/* test_tlist.c - a list's joined text kept in step with appends and drops
 * equals the list joined afresh, through compactions, ring growth, copies
 * and a stale list written again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "vigil/tlist.h"

#define MODEL_MAX 400

/* The list as its owner holds it: entries oldest first. */
typedef struct {
    char v[MODEL_MAX][24];
    int n;
} model;

static void push(vigil_tlist *l, model *m, const char *e)
{
    assert_true(m->n < MODEL_MAX);
    snprintf(m->v[m->n++], sizeof m->v[0], "%s", e);
    vigil_jtext *t = vigil_tlist_begin(l);
    vigil_jtext_esc(t, e);
    vigil_tlist_end(l);
}

static void drop(vigil_tlist *l, model *m, int k)
{
    int d = k < m->n ? k : m->n;
    memmove(m->v, m->v + d, (size_t)(m->n - d) * sizeof m->v[0]);
    m->n -= d;
    vigil_tlist_drop(l, k);
}

/* The list's text equals the entries joined by its separator. */
static void check(const vigil_tlist *l, const model *m)
{
    char want[MODEL_MAX * 25 + 1] = "";
    size_t w = 0;
    for (int i = 0; i < m->n; i++) {
        if (i)
            want[w++] = l->sep;
        size_t n = strlen(m->v[i]);
        memcpy(want + w, m->v[i], n);
        w += n;
    }
    want[w] = '\0';
    size_t len = 99;
    const char *s = vigil_tlist_text(l, &len);
    assert_non_null(s);
    assert_int_equal(len, w);
    assert_memory_equal(s, want, w + 1); /* NUL-terminated too */
    assert_int_equal(vigil_tlist_count(l), m->n);
}

static void an_empty_list_is_an_empty_text(void **u)
{
    (void)u;
    vigil_tlist l;
    vigil_tlist_init(&l, ' ');
    model m = {.n = 0};
    check(&l, &m);
    push(&l, &m, "a");
    check(&l, &m);
    drop(&l, &m, 1);
    check(&l, &m);
    drop(&l, &m, 3); /* more than it holds: nothing changes */
    check(&l, &m);
    push(&l, &m, "b"); /* no separator before the first entry */
    push(&l, &m, "c");
    check(&l, &m);
    assert_string_equal(vigil_tlist_text(&l, &(size_t){0}), "b c");
    vigil_tlist_free(&l);
}

/* A bounded list as the services keep one: append, drop the oldest beyond
 * the bound; thousands of times, with entries of every length from 1 to 20
 * bytes, across many compactions and ring growths, against a list joined
 * afresh each time. */
static void appends_and_drops_follow_the_list(void **u)
{
    (void)u;
    static model m;
    m.n = 0;
    vigil_tlist l;
    vigil_tlist_init(&l, ',');
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int bound = step < 10000 ? 100 : 7 + (int)(seed >> 28);
        char e[24];
        int len = 1 + (int)((seed >> 8) % 20);
        for (int i = 0; i < len; i++)
            e[i] = (char)('a' + ((seed >> (i % 16)) + (unsigned)i) % 26);
        e[len] = '\0';
        if ((seed >> 20) % 13 == 0)
            drop(&l, &m, 1 + (int)((seed >> 5) % 9)); /* a drop of several */
        if (m.n >= bound)
            drop(&l, &m, m.n - bound + 1);
        push(&l, &m, e);
        check(&l, &m);
    }
    /* the dead bytes before the text never outgrow the text much */
    assert_true(l.start <= l.t.n - l.start + 21);
    vigil_tlist_free(&l);
}

/* Escaped entries: the text is the inside of one JSON string. */
static void entries_are_escaped_as_they_are_written(void **u)
{
    (void)u;
    vigil_tlist l;
    vigil_tlist_init(&l, ' ');
    vigil_jtext *t = vigil_tlist_begin(&l);
    vigil_jtext_esc(t, "q\"1");
    vigil_jtext_ch(t, ' ');
    vigil_jtext_i64(t, 7);
    vigil_tlist_end(&l);
    t = vigil_tlist_begin(&l);
    vigil_jtext_esc(t, "t\tab");
    vigil_jtext_ch(t, ' ');
    vigil_jtext_i64(t, -2);
    vigil_tlist_end(&l);
    size_t len;
    assert_string_equal(vigil_tlist_text(&l, &len), "q\\\"1 7 t\\tab -2");
    vigil_tlist_drop(&l, 1);
    assert_string_equal(vigil_tlist_text(&l, &len), "t\\tab -2");
    assert_int_equal(len, 8);
    vigil_tlist_free(&l);
}

/* A copy holds the same text and goes on on its own. */
static void a_copy_goes_on_on_its_own(void **u)
{
    (void)u;
    static model m, mc;
    m.n = 0;
    vigil_tlist l, c;
    vigil_tlist_init(&l, ' ');
    vigil_tlist_init(&c, '?');
    for (int i = 0; i < 40; i++) {
        char e[8];
        snprintf(e, sizeof e, "e%d", i);
        push(&l, &m, e);
    }
    drop(&l, &m, 25); /* the ring's head is inside, the text's start too */
    vigil_tlist_copy(&c, &l);
    mc = m;
    check(&c, &mc);
    assert_int_equal(c.sep, ' ');
    push(&c, &mc, "new");
    drop(&c, &mc, 2);
    check(&c, &mc);
    check(&l, &m); /* the original is as it was */
    vigil_tlist_free(&l);
    vigil_tlist_free(&c);
}

/* A stale list gives no text until it is reset and written again; drops
 * and entries meanwhile change nothing. */
static void a_stale_list_is_written_again(void **u)
{
    (void)u;
    static model m;
    m.n = 0;
    vigil_tlist l;
    vigil_tlist_init(&l, ' ');
    push(&l, &m, "a");
    push(&l, &m, "b");
    vigil_tlist_stale(&l);
    size_t len;
    assert_null(vigil_tlist_text(&l, &len));
    assert_int_equal(vigil_tlist_count(&l), -1);
    vigil_tlist_drop(&l, 1);
    vigil_jtext_lit(vigil_tlist_begin(&l), "c");
    vigil_tlist_end(&l);
    assert_null(vigil_tlist_text(&l, &len));
    vigil_tlist c;
    vigil_tlist_init(&c, ' ');
    vigil_tlist_copy(&c, &l); /* a copy of a stale list is stale */
    assert_null(vigil_tlist_text(&c, &len));
    vigil_tlist_free(&c);
    assert_int_equal(l.rewrites, 0); /* drops of everything are no rewrite */
    vigil_tlist_reset(&l, '+'); /* with another separator */
    assert_int_equal(l.rewrites, 1);
    m.n = 0;
    push(&l, &m, "x");
    push(&l, &m, "y");
    check(&l, &m);
    assert_string_equal(vigil_tlist_text(&l, &len), "x+y");
    vigil_tlist_free(&l);
    assert_null(vigil_tlist_text(&l, &len)); /* freed: stale */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_list_is_an_empty_text),
        cmocka_unit_test(appends_and_drops_follow_the_list),
        cmocka_unit_test(entries_are_escaped_as_they_are_written),
        cmocka_unit_test(a_copy_goes_on_on_its_own),
        cmocka_unit_test(a_stale_list_is_written_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
