/* svg_testutil.c: see svg_testutil.h. The readers know the markup render_plot.c writes (its
 * attribute order included): a change there shows up here first. */
#include "svg_testutil.h"

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool entity(const char *p)
{
    static const char *ok[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
    for (int i = 0; i < 5; i++)
        if (!strncmp(p, ok[i], strlen(ok[i]))) return true;
    return false;
}

const char *tt_svg_xml_problem(const char *s)
{
    static char why[128];
    char stack[64][32];
    int depth = 0, elements = 0;
    const char *s0 = s;
#define BAD(msg) return snprintf(why, sizeof why, "%s at offset %ld", msg, (long)(s - s0)), why
    while (*s) {
        if (*s == '&' && !entity(s)) BAD("bare &");
        if (*s == '>') BAD("bare >");
        if (*s != '<') {
            s++;
            continue;
        }
        if (!strncmp(s, "<?", 2) || !strncmp(s, "<!--", 4)) {
            const char *end = strstr(s, s[1] == '?' ? "?>" : "-->");
            if (!end) BAD("unterminated <? or <!--");
            s = end + 2;
            continue;
        }
        bool closing = s[1] == '/';
        const char *p = s + 1 + closing;
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:");
        if (!n || n >= 32) BAD("bad tag name");
        char name[32];
        memcpy(name, p, n);
        name[n] = '\0';
        for (p += n; *p && *p != '>' && strncmp(p, "/>", 2); p++) {
            if (*p == '<') BAD("< inside a tag");
            if (*p != '"' && *p != '\'') continue;
            const char *end = strchr(p + 1, *p);
            if (!end) BAD("unterminated attribute value");
            for (const char *q = p + 1; q < end; q++)
                if (*q == '<' || (*q == '&' && !entity(q))) BAD("bad character in an attribute");
            p = end;
        }
        if (!*p) BAD("unterminated tag");
        bool self = *p == '/';
        if (closing) {
            if (!depth || strcmp(stack[depth - 1], name)) BAD("mismatched closing tag");
            depth--;
        } else if (!self) {
            if (depth == 64) BAD("nested too deep");
            strcpy(stack[depth++], name);
        }
        elements += !closing;
        s = p + (self ? 2 : 1);
    }
    if (depth) BAD("unclosed element");
    if (!elements) BAD("no element");
#undef BAD
    return NULL;
}

int tt_svg_count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

int tt_svg_panels(const char *svg, tt_svg_panel *p, int max)
{
    static const char tag[] = "<g class=\"panel\">";
    int n = 0;
    for (const char *s = strstr(svg, tag); s && n < max; n++) {
        const char *next = strstr(s + 1, tag);
        p[n] = (tt_svg_panel){s, next ? next : s + strlen(s)};
        s = next;
    }
    return n;
}

/* The first occurrence of what inside the panel, or NULL. */
static const char *find_in(tt_svg_panel p, const char *what)
{
    const char *s = strstr(p.at, what);
    return s && s < p.end ? s : NULL;
}

tt_svg_box tt_svg_frame(tt_svg_panel p)
{
    tt_svg_box b = {0, 0, 0, 0};
    const char *s = find_in(p, "<rect class=\"frame\"");
    ck_assert_msg(s, "a panel without a frame");
    ck_assert_int_eq(sscanf(s, "<rect class=\"frame\" x=\"%lf\" y=\"%lf\" width=\"%lf\" "
                            "height=\"%lf\"", &b.x, &b.y, &b.w, &b.h), 4);
    return b;
}

bool tt_svg_legend(tt_svg_panel p, tt_svg_box *b)
{
    const char *s = find_in(p, "<g class=\"legend\">\n<rect");
    if (!s) return false;
    s = strstr(s, "<rect");
    ck_assert_int_eq(sscanf(s, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &b->x,
                            &b->y, &b->w, &b->h), 4);
    return true;
}

int tt_svg_ticks(tt_svg_panel p, bool x, tt_svg_tick *t, int max)
{
    const char *tail = x ? "\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\" "
                           "font-size=\"11\">"
                         : "\" text-anchor=\"end\" dominant-baseline=\"middle\" stroke=\"none\" "
                           "fill=\"#333\" font-size=\"11\">";
    int n = 0;
    for (const char *s = find_in(p, tail); s && n < max; s = find_in((tt_svg_panel){s + 1, p.end},
                                                                    tail)) {
        const char *open = s; /* back to the start of this <text */
        while (open > p.at && strncmp(open, "<text ", 6)) open--;
        double px, py;
        ck_assert_int_eq(sscanf(open, "<text x=\"%lf\" y=\"%lf\"", &px, &py), 2);
        const char *label = s + strlen(tail), *close = strstr(label, "</text>");
        ck_assert_ptr_nonnull(close);
        tt_svg_tick *k = &t[n++];
        snprintf(k->label, sizeof k->label, "%.*s", (int)(close - label), label);
        k->value = strtod(k->label, NULL);
        k->px = x ? px : py;
    }
    return n;
}

double tt_svg_px_of(const tt_svg_tick *t, int n, bool log, double v)
{
    ck_assert_msg(n >= 2, "fewer than two tick labels: no scale to read");
    double a = log ? log10(t[0].value) : t[0].value;
    double b = log ? log10(t[n - 1].value) : t[n - 1].value, u = log ? log10(v) : v;
    return t[0].px + (u - a) / (b - a) * (t[n - 1].px - t[0].px);
}

bool tt_svg_marker_at(tt_svg_panel p, double x, double y, const char *fill, double tol)
{
    char want[64];
    snprintf(want, sizeof want, "r=\"3\" fill=\"%s\"", fill);
    for (const char *s = find_in(p, "<circle cx="); s;
         s = find_in((tt_svg_panel){s + 1, p.end}, "<circle cx=")) {
        double cx, cy;
        if (sscanf(s, "<circle cx=\"%lf\" cy=\"%lf\"", &cx, &cy) != 2) continue;
        const char *close = strchr(s, '>');
        bool colour = strstr(s, want) && strstr(s, want) < close;
        if (colour && hypot(cx - x, cy - y) <= tol) return true;
    }
    return false;
}
