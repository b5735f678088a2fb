/* tz.c - UTC offsets from time zone data handed in by the shell: a TZif
 * file's bytes (RFC 8536, versions 1-4) or a POSIX TZ rule (the TZif
 * footer, also accepted alone). Pure: no file access, no localtime/tzset,
 * so daylight saving changes are unit-tested with an injected clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heartbeat.h"

typedef struct posix_date {
    char kind;      /* 'M' month.week.day, 'J' julian 1..365 (no Feb 29), 'D' day 0..365 */
    int m, w, d, n;
    int time_s;     /* local time of the change, seconds (may be negative or > 24 h) */
} posix_date;

typedef struct posix_rule {
    bool valid;
    int std_east, dst_east;   /* seconds east of UTC */
    bool has_dst;
    posix_date start, end;
} posix_rule;

struct hb_tz {
    int64_t *trans;    /* transition instants (UTC seconds), ascending */
    unsigned char *idx;/* type index per transition */
    int n_trans;
    int *type_off;     /* offsets per type */
    bool *type_dst;
    int n_types;
    posix_rule footer;
};

void hb_tz_free(hb_tz *tz)
{
    if (!tz)
        return;
    free(tz->trans);
    free(tz->idx);
    free(tz->type_off);
    free(tz->type_dst);
    free(tz);
}

/* ---------------------------------------------------------------- POSIX */

static const char *parse_name(const char *p)
{
    if (*p == '<') {
        const char *q = strchr(p, '>');
        return q && q - p >= 4 ? q + 1 : NULL;
    }
    const char *q = p;
    while ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z'))
        q++;
    return q - p >= 3 ? q : NULL;
}

/* [+-]hh[:mm[:ss]] with hours up to max_h; returns the end or NULL. */
static const char *parse_hms(const char *p, int max_h, int *out)
{
    int sign = 1;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    if (!(*p >= '0' && *p <= '9'))
        return NULL;
    int h = 0, m = 0, s = 0, digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 3)
        h = h * 10 + (*p++ - '0'), digits++;
    if (h > max_h)
        return NULL;
    if (*p == ':') {
        p++;
        if (!(p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9'))
            return NULL;
        m = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
        if (*p == ':') {
            p++;
            if (!(p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9'))
                return NULL;
            s = (p[0] - '0') * 10 + (p[1] - '0');
            p += 2;
        }
    }
    if (m > 59 || s > 59)
        return NULL;
    *out = sign * (h * 3600 + m * 60 + s);
    return p;
}

static const char *parse_int(const char *p, int lo, int hi, int *out)
{
    if (!(*p >= '0' && *p <= '9'))
        return NULL;
    int v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > hi)
            return NULL;
    }
    if (v < lo)
        return NULL;
    *out = v;
    return p;
}

static const char *parse_date(const char *p, posix_date *d)
{
    memset(d, 0, sizeof *d);
    if (*p == 'M') {
        d->kind = 'M';
        if (!(p = parse_int(p + 1, 1, 12, &d->m)) || *p++ != '.' ||
            !(p = parse_int(p, 1, 5, &d->w)) || *p++ != '.' || !(p = parse_int(p, 0, 6, &d->d)))
            return NULL;
    } else if (*p == 'J') {
        d->kind = 'J';
        if (!(p = parse_int(p + 1, 1, 365, &d->n)))
            return NULL;
    } else {
        d->kind = 'D';
        if (!(p = parse_int(p, 0, 365, &d->n)))
            return NULL;
    }
    d->time_s = 2 * 3600;
    if (*p == '/' && !(p = parse_hms(p + 1, 167, &d->time_s)))
        return NULL;
    return p;
}

static int parse_posix(const char *spec, posix_rule *r)
{
    memset(r, 0, sizeof *r);
    const char *p = parse_name(spec);
    int west;
    if (!p || !(p = parse_hms(p, 24, &west)))
        return -1;
    r->std_east = -west;
    r->dst_east = r->std_east;
    if (*p) {
        if (!(p = parse_name(p)))
            return -1;
        r->has_dst = true;
        r->dst_east = r->std_east + 3600;
        if (*p && *p != ',') {
            if (!(p = parse_hms(p, 24, &west)))
                return -1;
            r->dst_east = -west;
        }
        if (*p == ',') {
            if (!(p = parse_date(p + 1, &r->start)) || *p++ != ',' || !(p = parse_date(p, &r->end)))
                return -1;
        } else {
            /* no rule given: the US rule POSIX implementations assume */
            r->start = (posix_date){'M', 3, 2, 0, 0, 7200};
            r->end = (posix_date){'M', 11, 1, 0, 0, 7200};
        }
    }
    if (*p)
        return -1;
    r->valid = true;
    return 0;
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int64_t y, int m)
{
    static const int md[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : md[m - 1];
}

/* Days since the epoch of the rule's date in year y. */
static int64_t date_days(const posix_date *d, int64_t y)
{
    int64_t jan1 = hb_days_from_civil(y, 1, 1);
    if (d->kind == 'J')
        return jan1 + d->n - 1 + (leap(y) && d->n >= 60 ? 1 : 0);
    if (d->kind == 'D')
        return jan1 + d->n;
    int64_t first = hb_days_from_civil(y, d->m, 1);
    int wday = (int)(((first % 7) + 11) % 7);
    int day = 1 + (d->d - wday + 7) % 7 + (d->w - 1) * 7;
    while (day > month_days(y, d->m))
        day -= 7;
    return first + day - 1;
}

static int posix_offset(const posix_rule *r, int64_t t, bool *dst)
{
    if (!r->has_dst) {
        *dst = false;
        return r->std_east;
    }
    int64_t days = (t + r->std_east) / 86400 - ((t + r->std_east) % 86400 < 0 ? 1 : 0);
    int y, m, d;
    hb_civil_from_days(days, &y, &m, &d);
    /* the change to DST happens at a standard-time wall clock, back at a
     * daylight one */
    int64_t start = date_days(&r->start, y) * 86400 + r->start.time_s - r->std_east;
    int64_t end = date_days(&r->end, y) * 86400 + r->end.time_s - r->dst_east;
    bool in;
    if (start < end)
        in = t >= start && t < end;
    else
        in = !(t >= end && t < start); /* southern hemisphere: DST spans the new year */
    *dst = in;
    return in ? r->dst_east : r->std_east;
}

hb_tz *hb_tz_from_posix(const char *spec, char *err, size_t errlen)
{
    hb_tz *tz = calloc(1, sizeof *tz);
    if (!tz) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!spec || parse_posix(spec, &tz->footer) != 0) {
        snprintf(err, errlen, "not a POSIX TZ rule: '%.60s'", spec ? spec : "");
        hb_tz_free(tz);
        return NULL;
    }
    return tz;
}

/* ---------------------------------------------------------------- TZif */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
} tzif_counts;

static int read_header(const unsigned char *p, size_t left, tzif_counts *c, int *version)
{
    if (left < 44 || memcmp(p, "TZif", 4) != 0)
        return -1;
    *version = p[4] ? p[4] - '0' : 1;
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    if (c->type == 0 || c->type > 256 || c->time > 100000 || c->chars > 100000 ||
        c->leap > 100000 || c->isut > 256 || c->isstd > 256)
        return -1;
    return 0;
}

static size_t block_len(const tzif_counts *c, int tsize)
{
    return (size_t)c->time * (size_t)tsize + c->time + (size_t)c->type * 6 + c->chars +
           (size_t)c->leap * (size_t)(tsize + 4) + c->isstd + c->isut;
}

hb_tz *hb_tz_from_tzif(const unsigned char *data, size_t len, char *err, size_t errlen)
{
    tzif_counts c;
    int version;
    const unsigned char *p = data;
    if (!data || read_header(p, len, &c, &version) != 0) {
        snprintf(err, errlen, "not a TZif file");
        return NULL;
    }
    int tsize = 4;
    size_t b1 = block_len(&c, 4);
    if (44 + b1 > len) {
        snprintf(err, errlen, "TZif data truncated");
        return NULL;
    }
    p += 44;
    size_t left = len - 44;
    if (version >= 2) { /* skip the 32-bit block, read the 64-bit one */
        p += b1;
        left -= b1;
        int v2;
        if (read_header(p, left, &c, &v2) != 0 || 44 + block_len(&c, 8) > left) {
            snprintf(err, errlen, "TZif v2 data truncated");
            return NULL;
        }
        p += 44;
        left -= 44;
        tsize = 8;
    }
    hb_tz *tz = calloc(1, sizeof *tz);
    if (!tz) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    tz->n_trans = (int)c.time;
    tz->n_types = (int)c.type;
    tz->trans = calloc(c.time + 1, sizeof *tz->trans);
    tz->idx = calloc(c.time + 1, 1);
    tz->type_off = calloc(c.type, sizeof *tz->type_off);
    tz->type_dst = calloc(c.type, sizeof *tz->type_dst);
    if (!tz->trans || !tz->idx || !tz->type_off || !tz->type_dst) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < c.time; i++)
        tz->trans[i] = tsize == 8 ? be64(p + (size_t)i * 8) : (int32_t)be32(p + (size_t)i * 4);
    p += (size_t)c.time * (size_t)tsize;
    for (uint32_t i = 0; i < c.time; i++) {
        tz->idx[i] = p[i];
        if (p[i] >= c.type) {
            snprintf(err, errlen, "TZif transition type out of range");
            goto fail;
        }
    }
    p += c.time;
    for (uint32_t i = 0; i < c.type; i++) {
        tz->type_off[i] = (int32_t)be32(p + (size_t)i * 6);
        tz->type_dst[i] = p[(size_t)i * 6 + 4] != 0;
        if (tz->type_off[i] < -26 * 3600 || tz->type_off[i] > 26 * 3600) {
            snprintf(err, errlen, "TZif offset out of range");
            goto fail;
        }
    }
    p += (size_t)c.type * 6;
    p += c.chars + (size_t)c.leap * (size_t)(tsize + 4) + c.isstd + c.isut;
    if (tsize == 8) {
        const unsigned char *end = data + len;
        if (p < end && *p == '\n') {
            const unsigned char *q = p + 1;
            while (q < end && *q != '\n')
                q++;
            if (q < end && q - p - 1 > 0 && q - p - 1 < 128) {
                char spec[128];
                memcpy(spec, p + 1, (size_t)(q - p - 1));
                spec[q - p - 1] = '\0';
                if (parse_posix(spec, &tz->footer) != 0)
                    memset(&tz->footer, 0, sizeof tz->footer); /* unusable: last type instead */
            }
        }
    }
    return tz;
fail:
    hb_tz_free(tz);
    return NULL;
}

int hb_tz_offset(const hb_tz *tz, int64_t utc_s, bool *dst)
{
    bool d = false;
    int off = 0;
    if (!tz) {
        off = 0;
    } else if (tz->n_trans == 0 && tz->footer.valid) {
        off = posix_offset(&tz->footer, utc_s, &d);
    } else if (tz->n_trans == 0 || utc_s < tz->trans[0]) {
        off = tz->n_types > 0 ? tz->type_off[0] : 0;
        d = tz->n_types > 0 && tz->type_dst[0];
    } else if (utc_s >= tz->trans[tz->n_trans - 1] && tz->footer.valid) {
        off = posix_offset(&tz->footer, utc_s, &d);
    } else {
        int lo = 0, hi = tz->n_trans - 1; /* last transition <= utc_s */
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            if (tz->trans[mid] <= utc_s)
                lo = mid;
            else
                hi = mid - 1;
        }
        off = tz->type_off[tz->idx[lo]];
        d = tz->type_dst[tz->idx[lo]];
    }
    if (dst)
        *dst = d;
    return off;
}
