/* render_html.c: tt_render_index_html, the offline viewer (its CSS and JS are the PAGE_*
 * strings): every epoch file embedded as JSON, drawn by the page's own script, so it opens from
 * file:// with no server and no network. */
#include "train/report/render.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const PAGE_HEAD =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<style>\n"
    "body{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fff}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:14px;margin:14px 0 6px}\n"
    "#tt-note{color:#555;margin:0 0 12px}\n"
    "#tt-controls{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;margin-bottom:8px}\n"
    "#tt-epoch{width:260px;vertical-align:middle}\n"
    "#tt-main{display:flex;flex-wrap:wrap;gap:32px;align-items:flex-start}\n"
    "#tt-map text.q,#tt-map text.k{fill:#222}#tt-map text.hl{fill:#d94801;font-weight:bold}\n"
    "#tt-map rect.c:hover{stroke:#d94801;stroke-width:2}\n"
    "#tt-stats,#tt-focus{max-width:620px;color:#444}\n"
    "#tt-tip{position:fixed;display:none;pointer-events:none;background:#222;color:#fff;"
    "padding:3px 7px;border-radius:3px;white-space:nowrap}\n"
    "#tt-bar{width:240px;height:12px;border:1px solid #888}\n"
    ".tt-scale{display:flex;justify-content:space-between;width:242px;font-size:12px}\n"
    "#tt-overview{display:grid;gap:6px;justify-content:start}\n"
    ".tt-thumb{border:2px solid transparent;cursor:pointer;font-size:11px;text-align:center}\n"
    ".tt-thumb.sel{border-color:#d94801}.tt-thumb canvas{display:block;margin:auto}\n"
    "</style>\n";

/* Before anything else runs, so a headless browser sees every failure. */
static const char *const PAGE_HOOKS =
    "<script>\n"
    "window.onerror = function (msg, src, line) {\n"
    "  document.body.dataset.ttError = String(msg) + (line ? ' (line ' + line + ')' : '');\n"
    "};\n"
    "window.addEventListener('unhandledrejection', function (ev) {\n"
    "  document.body.dataset.ttError = 'unhandled rejection: ' + String(ev.reason);\n"
    "});\n"
    "</script>\n";

static const char *const PAGE_BODY =
    "<div id=\"tt-controls\">\n"
    "<label>epoch <input type=\"range\" id=\"tt-epoch\" min=\"0\" max=\"0\" value=\"0\"></label>\n"
    "<b id=\"tt-epoch-label\"></b> <button type=\"button\" id=\"tt-play\">play</button>\n"
    "<label>probe <select id=\"tt-probe\"></select></label>\n"
    "<label>layer <select id=\"tt-layer\"></select></label>\n"
    "<label>head <select id=\"tt-head\"></select></label>\n"
    "<label><input type=\"checkbox\" id=\"tt-auto\"> reload every 10 s</label>\n"
    "</div>\n<div id=\"tt-main\">\n"
    "<div><h2 id=\"tt-title\"></h2><div id=\"tt-map\"></div><p id=\"tt-stats\"></p>"
    "<p id=\"tt-focus\"></p></div>\n"
    "<div><h2>attention weight</h2><div id=\"tt-bar\"></div><div class=\"tt-scale\"><span>0"
    "</span><span>0.25</span><span>0.5</span><span>0.75</span><span>1</span></div>\n"
    "<h2>this head's mean row entropy over the epochs (dashed: uniform)</h2>"
    "<canvas id=\"tt-ent\" width=\"340\" height=\"130\"></canvas>\n"
    "<h2>every head of this epoch (click to select)</h2><div id=\"tt-overview\"></div></div>\n"
    "</div>\n<div id=\"tt-tip\"></div>\n";

/* The viewer; RAMP (the colour stops) is defined before it. */
static const char *const PAGE_JS =
    "var $ = function (id) { return document.getElementById(id); };\n"
    "var E = JSON.parse($('tt-data').textContent).epochs;\n"
    "var st = {e: E.length - 1, p: 0, l: 0, h: 0}, timer = null, reload = null;\n"
    "var tip = $('tt-tip'), ctx = document.createElement('canvas').getContext('2d');\n"
    "function clamp(v, n) { return Math.max(0, Math.min(n - 1, v | 0)); }\n"
    "function esc(s) {\n"
    "  return String(s).replace(/[&<>\"']/g, function (c) {\n"
    "    return '&#' + c.charCodeAt(0) + ';';\n"
    "  });\n"
    "}\n"
    "/* <tag a=\"v\" ...>body</tag>; values are numbers or already escaped */\n"
    "function el(tag, a, body) {\n"
    "  var s = '<' + tag;\n"
    "  Object.keys(a).forEach(function (k) { s += ' ' + k + '=\"' + a[k] + '\"'; });\n"
    "  return s + '>' + (body || '') + '</' + tag + '>';\n"
    "}\n"
    "function color(w) {\n"
    "  var x = Math.max(0, Math.min(1, w || 0)) * (RAMP.length - 1);\n"
    "  var i = Math.min(Math.floor(x), RAMP.length - 2), f = x - i;\n"
    "  return 'rgb(' + [0, 1, 2].map(function (k) {\n"
    "    return Math.round(RAMP[i][k] + (RAMP[i + 1][k] - RAMP[i][k]) * f);\n"
    "  }).join(',') + ')';\n"
    "}\n"
    "/* mean row entropy in nats: log T for uniform rows, 0 for one-hot rows */\n"
    "function entropy(m) {\n"
    "  var s = 0;\n"
    "  m.forEach(function (row) {\n"
    "    row.forEach(function (p) { if (p > 0) s -= p * Math.log(p); });\n"
    "  });\n"
    "  return m.length ? s / m.length : 0;\n"
    "}\n"
    "/* one head's T x T map, or null where an epoch lacks it */\n"
    "function head(ep, p, l, h) {\n"
    "  var pr = ep.probes[p];\n"
    "  return (pr && pr.attention[l] && pr.attention[l][0][h]) || null;\n"
    "}\n"
    "location.hash.slice(1).split('&').forEach(function (kv) {\n"
    "  var a = kv.split('='), v = parseInt(a[1], 10);\n"
    "  if (a[0] === 'e')\n"
    "    st.e = a[1] === 'last' ? E.length - 1\n"
    "                           : E.findIndex(function (ep) { return ep.epoch === v; });\n"
    "  else if (a[0] === 'auto') $('tt-auto').checked = a[1] === '1';\n"
    "  else if (Object.prototype.hasOwnProperty.call(st, a[0]) && !isNaN(v)) st[a[0]] = v;\n"
    "});\n"
    "if (st.e < 0) st.e = E.length - 1;\n"
    "/* the view lives in the URL, so a reload keeps it; e=last follows new epochs */\n"
    "function save() {\n"
    "  if (!E.length) return;\n"
    "  var h = '#e=' + (st.e === E.length - 1 ? 'last' : E[st.e].epoch) + '&p=' + st.p +\n"
    "      '&l=' + st.l + '&h=' + st.h + ($('tt-auto').checked ? '&auto=1' : '');\n"
    "  try { history.replaceState(null, '', h); } catch (x) { location.hash = h; }\n"
    "}\n"
    "function options(sel, labels, cur) {\n"
    "  var same = sel.options.length === labels.length &&\n"
    "      labels.every(function (t, i) { return sel.options[i].text === t; });\n"
    "  if (!same) {\n"
    "    sel.innerHTML = '';\n"
    "    labels.forEach(function (t, i) { sel.add(new Option(t, i)); });\n"
    "  }\n"
    "  sel.value = cur;\n"
    "}\n"
    "function range(n) { return Array.from({length: n}, function (_, i) { return String(i); }); }\n"
    "function drawMap(pr, A) {\n"
    "  var tok = pr.tokens, T = tok.length, cs = Math.max(18, Math.min(44, Math.floor(440 / T)));\n"
    "  ctx.font = '13px sans-serif';\n"
    "  var lab = 12 + Math.max.apply(null, tok.map(function (t) {\n"
    "    return ctx.measureText(t).width;\n"
    "  }));\n"
    "  var n = Math.ceil(lab + T * cs + 4), s = [];\n"
    "  tok.forEach(function (t, j) {\n"
    "    var c = lab + (j + 0.5) * cs;\n"
    "    var turn = 'translate(' + c + ',' + (lab - 6) + ') rotate(-90)';\n"
    "    s.push(el('text', {'class': 'k', 'data-j': j, 'dominant-baseline': 'middle',\n"
    "                       transform: turn}, esc(t)));\n"
    "    s.push(el('text', {'class': 'q', 'data-i': j, x: lab - 6, y: c, 'text-anchor': 'end',\n"
    "                       'dominant-baseline': 'middle'}, esc(t)));\n"
    "  });\n"
    "  A.forEach(function (row, i) {\n"
    "    row.forEach(function (w, j) {\n"
    "      var x = lab + j * cs, y = lab + i * cs;\n"
    "      s.push(el('rect', {'class': 'c', 'data-i': i, 'data-j': j, x: x, y: y, width: cs,\n"
    "                         height: cs, fill: color(w)}));\n"
    "      if (cs >= 34) /* room for the number */\n"
    "        s.push(el('text', {x: x + cs / 2, y: y + cs / 2, 'text-anchor': 'middle',\n"
    "                           'dominant-baseline': 'middle', 'font-size': 11,\n"
    "                           'pointer-events': 'none', fill: w > 0.55 ? '#fff' : '#222'},\n"
    "                  w.toFixed(2)));\n"
    "    });\n"
    "  });\n"
    "  s.push(el('rect', {x: lab, y: lab, width: T * cs, height: T * cs, fill: 'none',\n"
    "                     stroke: '#888', 'pointer-events': 'none'}));\n"
    "  $('tt-map').innerHTML = el('svg', {width: n, height: n, 'font-size': 13,\n"
    "                                     'font-family': 'sans-serif'}, s.join(''));\n"
    "}\n"
    "function highlight(i, j) {\n"
    "  $('tt-map').querySelectorAll('text.q, text.k').forEach(function (t) {\n"
    "    var q = t.classList.contains('q');\n"
    "    t.classList.toggle('hl', q ? +t.dataset.i === i : +t.dataset.j === j);\n"
    "  });\n"
    "}\n"
    "function hide() { tip.style.display = 'none'; highlight(-1, -1); }\n"
    "$('tt-map').addEventListener('mousemove', function (ev) {\n"
    "  var d = ev.target.dataset;\n"
    "  if (ev.target.tagName !== 'rect' || !d || d.i === undefined) return hide();\n"
    "  var ep = E[st.e], tok = ep.probes[st.p].tokens, A = head(ep, st.p, st.l, st.h);\n"
    "  var i = +d.i, j = +d.j;\n"
    "  tip.textContent = tok[i] + ' -> ' + tok[j] + ': ' + A[i][j].toFixed(3);\n"
    "  tip.style.display = 'block';\n"
    "  tip.style.left = ev.clientX + 14 + 'px';\n"
    "  tip.style.top = ev.clientY + 14 + 'px';\n"
    "  highlight(i, j);\n"
    "});\n"
    "$('tt-map').addEventListener('mouseleave', hide);\n"
    "/* every head of this epoch and probe, small, with its mean row entropy; click to select */\n"
    "function drawOverview(ep) {\n"
    "  var box = $('tt-overview'), T = ep.probes[st.p].tokens.length;\n"
    "  var px = Math.max(3, Math.floor(64 / T));\n"
    "  box.innerHTML = '';\n"
    "  box.style.gridTemplateColumns = 'repeat(' + ep.heads + ', auto)';\n"
    "  for (let l = 0; l < ep.layers; l++) {\n"
    "    for (let h = 0; h < ep.heads; h++) {\n"
    "      var A = head(ep, st.p, l, h), c = document.createElement('canvas');\n"
    "      var g = c.getContext('2d'), d = document.createElement('div');\n"
    "      c.width = c.height = T * px;\n"
    "      A.forEach(function (row, i) {\n"
    "        row.forEach(function (w, j) {\n"
    "          g.fillStyle = color(w);\n"
    "          g.fillRect(j * px, i * px, px, px);\n"
    "        });\n"
    "      });\n"
    "      d.className = 'tt-thumb' + (l === st.l && h === st.h ? ' sel' : '');\n"
    "      d.title = 'layer ' + l + ', head ' + h + ': mean row entropy';\n"
    "      d.appendChild(c);\n"
    "      d.appendChild(document.createTextNode('L' + l + ' H' + h + ' \\u00b7 ' +\n"
    "                                            entropy(A).toFixed(2)));\n"
    "      d.onclick = function () { st.l = l; st.h = h; render(); };\n"
    "      box.appendChild(d);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "/* the selected head's mean row entropy over the epochs, against log T (uniform) */\n"
    "function drawEntropy(pr) {\n"
    "  var c = $('tt-ent'), g = c.getContext('2d'), W = c.width, H = c.height;\n"
    "  var L = 36, R = 10, Tp = 10, B = 20, top = Math.log(pr.tokens.length) || 1;\n"
    "  var x = function (k) {\n"
    "    return L + (E.length > 1 ? k / (E.length - 1) : 0.5) * (W - L - R);\n"
    "  };\n"
    "  var y = function (v) { return Tp + (1 - v / top) * (H - Tp - B); };\n"
    "  g.clearRect(0, 0, W, H);\n"
    "  g.font = '11px sans-serif';\n"
    "  g.fillStyle = '#333';\n"
    "  g.strokeStyle = '#bbb';\n"
    "  g.strokeRect(L, Tp, W - L - R, H - Tp - B);\n"
    "  g.fillText(top.toFixed(2), 2, y(top) + 4);\n"
    "  g.fillText('0', 2, y(0));\n"
    "  g.fillText('epoch ' + E[0].epoch, L, H - 5);\n"
    "  g.textAlign = 'right';\n"
    "  g.fillText(String(E[E.length - 1].epoch), W - R, H - 5);\n"
    "  g.textAlign = 'left';\n"
    "  g.setLineDash([4, 3]);\n"
    "  g.beginPath();\n"
    "  g.moveTo(L, y(top));\n"
    "  g.lineTo(W - R, y(top));\n"
    "  g.stroke();\n"
    "  g.setLineDash([]);\n"
    "  g.strokeStyle = '#2171b5';\n"
    "  g.lineWidth = 2;\n"
    "  g.beginPath();\n"
    "  var pen = false;\n"
    "  E.forEach(function (ep, k) {\n"
    "    var A = head(ep, st.p, st.l, st.h), ok = A && A.length === pr.tokens.length;\n"
    "    if (ok && pen) g.lineTo(x(k), y(entropy(A)));\n"
    "    else if (ok) g.moveTo(x(k), y(entropy(A)));\n"
    "    pen = ok;\n"
    "  });\n"
    "  g.stroke();\n"
    "  g.lineWidth = 1;\n"
    "  g.fillStyle = '#e6550d';\n"
    "  g.beginPath();\n"
    "  g.arc(x(st.e), y(entropy(head(E[st.e], st.p, st.l, st.h))), 4, 0, 2 * Math.PI);\n"
    "  g.fill();\n"
    "}\n"
    "function render() {\n"
    "  if (!E.length) {\n"
    "    $('tt-map').textContent = 'No attention dumps yet.';\n"
    "    return;\n"
    "  }\n"
    "  st.e = clamp(st.e, E.length);\n"
    "  var ep = E[st.e];\n"
    "  st.p = clamp(st.p, ep.probes.length);\n"
    "  st.l = clamp(st.l, ep.layers);\n"
    "  st.h = clamp(st.h, ep.heads);\n"
    "  var pr = ep.probes[st.p], A = head(ep, st.p, st.l, st.h), tok = pr.tokens, T = tok.length;\n"
    "  $('tt-epoch').max = E.length - 1;\n"
    "  $('tt-epoch').value = st.e;\n"
    "  $('tt-epoch-label').textContent =\n"
    "      'epoch ' + ep.epoch + (st.e === E.length - 1 ? ' (latest)' : '');\n"
    "  options($('tt-probe'), ep.probes.map(function (q, i) { return i + ': ' + q.text; }),\n"
    "          st.p);\n"
    "  options($('tt-layer'), range(ep.layers), st.l);\n"
    "  options($('tt-head'), range(ep.heads), st.h);\n"
    "  $('tt-title').textContent = '\"' + pr.text + '\", layer ' + st.l + ', head ' + st.h +\n"
    "      ', epoch ' + ep.epoch;\n"
    "  drawMap(pr, A);\n"
    "  $('tt-stats').textContent = 'Rows: query tokens; columns: key tokens. Mean row entropy ' +\n"
    "      entropy(A).toFixed(3) + ' nats (uniform: log ' + T + ' = ' + Math.log(T).toFixed(3) +\n"
    "      ').';\n"
    "  $('tt-focus').textContent = 'Strongest key per query: ' + A.map(function (row, i) {\n"
    "    var j = row.indexOf(Math.max.apply(null, row));\n"
    "    return tok[i] + ' -> ' + tok[j] + ' ' + row[j].toFixed(2);\n"
    "  }).join(', ');\n"
    "  drawEntropy(pr);\n"
    "  drawOverview(ep);\n"
    "  save();\n"
    "}\n"
    "function stop() {\n"
    "  clearInterval(timer);\n"
    "  timer = null;\n"
    "  $('tt-play').textContent = 'play';\n"
    "}\n"
    "function arm() {\n"
    "  clearTimeout(reload);\n"
    "  if ($('tt-auto').checked) reload = setTimeout(function () { location.reload(); }, 10000);\n"
    "}\n"
    "$('tt-epoch').addEventListener('input', function () {\n"
    "  stop();\n"
    "  st.e = +this.value;\n"
    "  render();\n"
    "});\n"
    "['probe', 'layer', 'head'].forEach(function (k) {\n"
    "  $('tt-' + k).addEventListener('change', function () {\n"
    "    st[k[0]] = +this.value;\n"
    "    render();\n"
    "  });\n"
    "});\n"
    "$('tt-play').addEventListener('click', function () {\n"
    "  if (timer) return stop();\n"
    "  if (st.e >= E.length - 1) st.e = 0;\n"
    "  render();\n"
    "  $('tt-play').textContent = 'pause';\n"
    "  timer = setInterval(function () {\n"
    "    if (st.e >= E.length - 1) return stop();\n"
    "    st.e++;\n"
    "    render();\n"
    "  }, 700);\n"
    "});\n"
    "document.addEventListener('keydown', function (ev) {\n"
    "  if (/^(SELECT|INPUT)$/.test(ev.target.tagName)) return;\n"
    "  if (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') return;\n"
    "  stop();\n"
    "  st.e += ev.key === 'ArrowRight' ? 1 : -1;\n"
    "  render();\n"
    "});\n"
    "$('tt-auto').addEventListener('change', function () { save(); arm(); });\n"
    "$('tt-bar').style.background = 'linear-gradient(to right,' +\n"
    "    RAMP.map(function (c) { return 'rgb(' + c.join(',') + ')'; }).join(',') + ')';\n"
    "render();\n"
    "arm();\n"
    "document.body.dataset.ttReady = '1';\n";

typedef struct epoch_text {
    int epoch;
    char *name, *text;
} epoch_text;

static int by_epoch(const void *a, const void *b)
{
    const epoch_text *x = a, *y = b;
    return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

static void free_epochs(epoch_text *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].name), free(v[i].text);
    free(v);
}

/* Every DIR/epoch_*.json, validated, sorted by its "epoch"; NULL with err on the first bad one. */
static epoch_text *read_epochs(const char *dir, int *n, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        tt_errorf(err, errlen, "%s: cannot open the attention directory: %s", dir, strerror(errno));
        return NULL;
    }
    int cap = 16;
    epoch_text *v = tt_xmalloc((size_t)cap * sizeof *v);
    *n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 11 || strncmp(de->d_name, "epoch_", 6) || strcmp(de->d_name + len - 5, ".json"))
            continue;
        char *path = tt_xmalloc(strlen(dir) + len + 2);
        sprintf(path, "%s/%s", dir, de->d_name);
        tt_attn_epoch e;
        char *text = tt_render_slurp(path, err, errlen);
        int rc = text ? tt_attn_epoch_parse(&e, text, path, err, errlen) : -1;
        free(path);
        if (rc) {
            free(text);
            free_epochs(v, *n);
            closedir(d);
            return NULL;
        }
        if (*n == cap) v = tt_xrealloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[(*n)++] = (epoch_text){e.epoch, tt_xstrdup(de->d_name), text};
        tt_attn_epoch_free(&e);
    }
    closedir(d);
    qsort(v, (size_t)*n, sizeof *v, by_epoch);
    for (int i = 1; i < *n; i++)
        if (v[i].epoch == v[i - 1].epoch) {
            tt_errorf(err, errlen, "%s: %s and %s both hold epoch %d; HINT: keep one of them", dir,
                      v[i - 1].name, v[i].name, v[i].epoch);
            free_epochs(v, *n);
            return NULL;
        }
    return v;
}

int tt_render_index_html(const char *attention_dir, char *err, size_t errlen)
{
    int n = 0;
    epoch_text *v = read_epochs(attention_dir, &n, err, errlen);
    if (!v) return -1;
    char *path = tt_xmalloc(strlen(attention_dir) + 16);
    sprintf(path, "%s/index.html", attention_dir);
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) {
        free(path);
        free_epochs(v, n);
        return -1;
    }
    FILE *f = o.f;
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
    fputs(PAGE_HEAD, f);
    fputs("<title>attention maps: ", f);
    tt_render_xml_puts(f, attention_dir);
    fprintf(f, "</title>\n</head>\n<body>\n%s<h1>Attention maps</h1>\n<p id=\"tt-note\">",
            PAGE_HOOKS);
    if (n > 1) fprintf(f, "%d dumps, epochs %d to %d; ", n, v[0].epoch, v[n - 1].epoch);
    if (n)
        fprintf(f, "last epoch available: <b>%d</b>. ", v[n - 1].epoch);
    else
        fputs("No dumps yet. ", f);
    fprintf(f, "Written %s from ", when);
    tt_render_xml_puts(f, attention_dir);
    fputs("; the trainer rewrites this page after every dump: reload to see new epochs. "
          "Layers and heads count from 0.</p>\n",
          f);
    fputs(PAGE_BODY, f);
    /* The files' own text, so every number is exactly theirs. '<' appears only inside strings
     * (the files are valid JSON), where \u003c means the same; so no "</script>" can end the
     * element early. */
    fputs("<script type=\"application/json\" id=\"tt-data\">{\"epochs\":[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        for (const char *c = v[i].text; *c; c++)
            if (*c == '<')
                fputs("\\u003c", f);
            else
                fputc(*c, f);
    }
    fputs("]}</script>\n<script>\n(function () {\n'use strict';\nvar RAMP = [", f);
    for (int k = 0; k < TT_RAMP_N; k++)
        fprintf(f, "%s[%d, %d, %d]", k ? ", " : "", tt_render_ramp[k][0], tt_render_ramp[k][1],
                tt_render_ramp[k][2]);
    fprintf(f, "];\n%s})();\n</script>\n</body>\n</html>\n", PAGE_JS);
    int rc = tt_atomic_close(&o, true, err, errlen);
    free(path);
    free_epochs(v, n);
    return rc;
}
