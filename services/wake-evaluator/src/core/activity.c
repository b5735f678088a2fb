/* activity.c - the room context the prompts and the autopilot read, and
 * PersonaMetadata.recentActivity:
 *   messagesLastHour     a persona's own messages in the last hour (exact
 *                        up to WAKE_PMSG_MAX);
 *   averageResponseTime  mean time between a persona's message and the
 *                        latest earlier message by someone else, over the
 *                        last hour;
 *   velocity             room messages per minute over the last 5 minutes;
 *   AI-to-human ratio    AI messages / max(1, human messages), 5 minutes.
 * Times are the receive times (`now` of each input), not producers' ts. */
#include <string.h>
#include <vigil/times_text.h>
#include "wake.h"

int wake_messages_last_hour(const wake_persona *p, int64_t now)
{
    int n = 0;
    for (int i = 0; i < p->n_msgs; i++)
        if (p->msg_ts[i] > now - WAKE_HOUR_MS && p->msg_ts[i] <= now)
            n++;
    return n;
}

int64_t wake_avg_response_ms(const wake_persona *p, int64_t now)
{
    int64_t sum = 0;
    int n = 0;
    for (int i = 0; i < p->n_msgs; i++)
        if (p->msg_ts[i] > now - WAKE_HOUR_MS && p->resp_ms[i] >= 0) {
            sum += p->resp_ms[i];
            n++;
        }
    return n ? sum / n : -1;
}

int wake_room_count(const wake_room *r, int64_t now, int64_t window_ms, int kind)
{
    int n = 0;
    for (int i = 0; i < r->n_times; i++)
        if (r->times[i] > now - window_ms && r->times[i] <= now &&
            (kind < 0 || (int)r->kinds[i] == kind))
            n++;
    return n;
}

double wake_room_velocity(const wake_room *r, int64_t now)
{
    return (double)wake_room_count(r, now, WAKE_ACTIVITY_MS, -1) /
           (double)(WAKE_ACTIVITY_MS / WAKE_MIN_MS);
}

double wake_room_ai_ratio(const wake_room *r, int64_t now)
{
    int ai = wake_room_count(r, now, WAKE_ACTIVITY_MS, WAKE_SENDER_AI);
    int human = wake_room_count(r, now, WAKE_ACTIVITY_MS, WAKE_SENDER_HUMAN);
    return (double)ai / (double)(human > 0 ? human : 1);
}

/* Presence is read from messages: a human wrote within human_present_ms
 * (presence events belong to dormancy-monitor). */
bool wake_room_human_present(const wake_room *r, const wake_config *c, int64_t now)
{
    return r->has_human && now - r->last_human.ts < c->human_present_ms;
}

double wake_room_avg_ai_tokens(const wake_room *r)
{
    if (r->ai_msgs <= 0)
        return 0;
    double t = (double)r->ai_chars / 4.0 / (double)r->ai_msgs;
    return t < 1.0 ? 1.0 : t;
}

static void prune_times(wake_room *r, int64_t now)
{
    int k = 0;
    while (k < r->n_times && r->times[k] <= now - WAKE_RECENT_MS)
        k++;
    if (k == 0)
        return;
    memmove(r->times, r->times + k, (size_t)(r->n_times - k) * sizeof r->times[0]);
    memmove(r->kinds, r->kinds + k, (size_t)(r->n_times - k) * sizeof r->kinds[0]);
    r->n_times -= k;
    vigil_tlist_drop(&r->times_text, k); /* the differences of times 1..k */
}

static void record_persona(wake_persona *p, int64_t now, int64_t ref)
{
    int k = 0;
    while (k < p->n_msgs && p->msg_ts[k] <= now - WAKE_HOUR_MS)
        k++;
    if (k == 0 && p->n_msgs == WAKE_PMSG_MAX)
        k = 1; /* full: forget the oldest */
    if (k > 0) {
        memmove(p->msg_ts, p->msg_ts + k, (size_t)(p->n_msgs - k) * sizeof p->msg_ts[0]);
        memmove(p->resp_ms, p->resp_ms + k, (size_t)(p->n_msgs - k) * sizeof p->resp_ms[0]);
        p->n_msgs -= k;
        vigil_tlist_drop(&p->msg_text, k);
        vigil_tlist_drop(&p->resp_text, k);
    }
    p->msg_ts[p->n_msgs] = now;
    p->resp_ms[p->n_msgs] = ref > 0 && ref <= now ? now - ref : -1;
    p->n_msgs++;
    /* the record's texts of both lists follow (wake.h), or are written again */
    wake_persona_texts_push(p);
    if (vigil_tlist_count(&p->msg_text) != p->n_msgs - 1 ||
        vigil_tlist_count(&p->resp_text) != p->n_msgs)
        wake_persona_texts(p);
    if (p->dormant_since > 0)
        p->sent_dormant++;
}

void wake_room_record(wake_room *r, const char *id, const char *sender, wake_sender type,
                      const char *text, int64_t now)
{
    prune_times(r, now);
    if (r->n_times == WAKE_TIMES_MAX) {
        memmove(r->times, r->times + 1, (size_t)(r->n_times - 1) * sizeof r->times[0]);
        memmove(r->kinds, r->kinds + 1, (size_t)(r->n_times - 1) * sizeof r->kinds[0]);
        r->n_times--;
        vigil_tlist_drop(&r->times_text, 1);
    }
    r->times[r->n_times] = now;
    r->kinds[r->n_times] = type;
    r->n_times++;
    /* the record's text of the times follows (wake.h), or is written again */
    vigil_times_kept_push(&r->times_text, r->times, r->n_times);
    if (vigil_tlist_count(&r->times_text) != r->n_times - 1)
        vigil_times_keep(&r->times_text, r->times, r->n_times);

    /* a ring: the newest takes the oldest's place, instead of moving the
     * nineteen others (about 9 KB) on every message */
    wake_msg *m;
    if (r->n_texts == WAKE_TEXTS_MAX) {
        m = &r->texts[r->texts_head];
        r->texts_head = (r->texts_head + 1) % WAKE_TEXTS_MAX;
        vigil_tlist_drop(&r->texts_text, 1);
    } else {
        m = &r->texts[(r->texts_head + r->n_texts++) % WAKE_TEXTS_MAX];
    }
    memset(m, 0, sizeof *m);
    vigil_utf8_copy(m->id, WAKE_EVID_MAX + 1, id);
    vigil_utf8_copy(m->sender, WAKE_ID_MAX + 1, sender);
    m->type = type;
    m->ts = now;
    vigil_utf8_copy(m->text, WAKE_TEXT_KEEP + 1, text);
    wake_room_texts_text_push(r, m);
    if (vigil_tlist_count(&r->texts_text) != r->n_texts)
        wake_room_texts_text(r);
    if (type == WAKE_SENDER_HUMAN) {
        r->last_human = *m;
        r->has_human = true;
    }
    if (type == WAKE_SENDER_AI) {
        r->ai_msgs++;
        r->ai_chars += (int64_t)strlen(text ? text : "");
    }

    bool same = strcmp(r->prev_sender, sender ? sender : "") == 0;
    int64_t ref = same ? r->prev_other_ts : r->prev_ts;
    if (type == WAKE_SENDER_AI) {
        wake_persona *p = wake_room_find(r, sender);
        if (p)
            record_persona(p, now, ref);
    }
    if (!same) {
        r->prev_other_ts = r->prev_ts;
        vigil_utf8_copy(r->prev_sender, WAKE_ID_MAX + 1, sender ? sender : "");
    }
    r->prev_ts = now;
    r->msgs_total++;
}
