/* quiet.c - quiet hours: a window of the user's local day, "22:00" to
 * "07:00" running across midnight; `quiet_hours: true` names the night. */
#include "heartbeat.h"

/* The night, for a config that asks for quiet nights without naming the
 * hours. Not the default: a persona without quiet hours runs at any hour,
 * and at night only what the value-of-information gate lets through
 * (off-peak hours cost more) reaches the user. */
static const hb_quiet NIGHT = {true, HB_NIGHT_START_MIN, HB_NIGHT_END_MIN};

const hb_quiet *hb_quiet_night(void)
{
    return &NIGHT;
}

int hb_parse_hhmm(const char *s)
{
    if (!s || !(s[0] >= '0' && s[0] <= '9') || !(s[1] >= '0' && s[1] <= '9') || s[2] != ':' ||
        !(s[3] >= '0' && s[3] <= '9') || !(s[4] >= '0' && s[4] <= '9') || s[5] != '\0')
        return -1;
    int h = (s[0] - '0') * 10 + (s[1] - '0');
    int m = (s[3] - '0') * 10 + (s[4] - '0');
    if (h > 23 || m > 59)
        return -1;
    return h * 60 + m;
}

bool hb_quiet_contains(const hb_quiet *q, int minute_of_day)
{
    if (!q->set || q->start_min == q->end_min)
        return false;
    if (q->start_min < q->end_min)
        return minute_of_day >= q->start_min && minute_of_day < q->end_min;
    return minute_of_day >= q->start_min || minute_of_day < q->end_min;
}

/* Measured on the local clock; a daylight saving change inside the window
 * makes it an hour off, and the run then due finds itself still inside (or
 * an hour past the end) and simply reschedules. */
int64_t hb_quiet_remaining_ms(const hb_quiet *q, const hb_local *l)
{
    int m = l->hour * 60 + l->minute;
    if (!hb_quiet_contains(q, m))
        return 0;
    int left = (q->end_min - m + 1440) % 1440;
    int64_t ms = (int64_t)left * 60000 - (int64_t)l->second * 1000;
    return ms > 0 ? ms : 1000;
}
