/* localtime.c - civil time from a UTC instant and a zone, with no libc time
 * functions (localtime/tzset read global state and the process's TZ). Date
 * arithmetic after Howard Hinnant's days_from_civil / civil_from_days. */
#include "heartbeat.h"

int64_t hb_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void hb_civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int dd = (int)(doy - (153 * mp + 2) / 5 + 1);
    int mm = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yy + (mm <= 2));
    *m = mm;
    *d = dd;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

hb_local hb_local_time(const hb_tz *tz, int64_t now_ms)
{
    hb_local l;
    int64_t s = floor_div(now_ms, 1000);
    bool dst = false;
    int off = hb_tz_offset(tz, s, &dst);
    int64_t t = s + off;
    int64_t days = floor_div(t, 86400);
    int64_t sod = t - days * 86400;
    hb_civil_from_days(days, &l.year, &l.month, &l.day);
    l.hour = (int)(sod / 3600);
    l.minute = (int)(sod / 60 % 60);
    l.second = (int)(sod % 60);
    l.wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
    l.offset_s = off;
    l.dst = dst;
    return l;
}
