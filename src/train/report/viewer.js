/* viewer.js: the attention viewer's script (index.html, see viewer.html): epoch slider and play
 * button, probe/layer/head selectors, the heatmap with hover values, the overview of all heads
 * and the selected head's entropy over the epochs against uniform rows (causal maps: row i
 * uniform over its i + 1 keys); the view is kept in the URL's hash. The loss curves are the
 * page's own inline SVG (render_html.c), drawn without script. It reads
 * the epochs from <script id="tt-data">, and runs inside the page's strict-mode function, after
 * `var RAMP` (the colour stops, render.c). The Makefile embeds this file (viewer_assets.h)
 * without this header comment, which ends at the first blank line. */

var $ = function (id) { return document.getElementById(id); };
var E = JSON.parse($('tt-data').textContent).epochs;
var st = {e: E.length - 1, p: 0, l: 0, h: 0}, timer = null, reload = null;
var tip = $('tt-tip'), ctx = document.createElement('canvas').getContext('2d');
function clamp(v, n) { return Math.max(0, Math.min(n - 1, v | 0)); }
function esc(s) {
  return String(s).replace(/[&<>"']/g, function (c) {
    return '&#' + c.charCodeAt(0) + ';';
  });
}
/* <tag a="v" ...>body</tag>; values are numbers or already escaped */
function el(tag, a, body) {
  var s = '<' + tag;
  Object.keys(a).forEach(function (k) { s += ' ' + k + '="' + a[k] + '"'; });
  return s + '>' + (body || '') + '</' + tag + '>';
}
function color(w) {
  var x = Math.max(0, Math.min(1, w || 0)) * (RAMP.length - 1);
  var i = Math.min(Math.floor(x), RAMP.length - 2), f = x - i;
  return 'rgb(' + [0, 1, 2].map(function (k) {
    return Math.round(RAMP[i][k] + (RAMP[i + 1][k] - RAMP[i][k]) * f);
  }).join(',') + ')';
}
/* mean row entropy in nats: log T for uniform rows, 0 for one-hot rows */
function entropy(m) {
  var s = 0;
  m.forEach(function (row) {
    row.forEach(function (p) { if (p > 0) s -= p * Math.log(p); });
  });
  return m.length ? s / m.length : 0;
}
/* what entropy() gives for rows uniform over the keys they see: log T, or, in a causal map
 * (row i sees keys 0..i), the mean of log(i + 1) */
function uniform(T, causal) {
  if (!causal) return Math.log(T);
  var s = 0;
  for (var i = 2; i <= T; i++) s += Math.log(i);
  return T ? s / T : 0;
}
/* one head's T x T map, or null where an epoch lacks it */
function head(ep, p, l, h) {
  var pr = ep.probes[p];
  return (pr && pr.attention[l] && pr.attention[l][0][h]) || null;
}
location.hash.slice(1).split('&').forEach(function (kv) {
  var a = kv.split('='), v = parseInt(a[1], 10);
  if (a[0] === 'e')
    st.e = a[1] === 'last' ? E.length - 1
                           : E.findIndex(function (ep) { return ep.epoch === v; });
  else if (a[0] === 'auto') $('tt-auto').checked = a[1] === '1';
  else if (Object.prototype.hasOwnProperty.call(st, a[0]) && !isNaN(v)) st[a[0]] = v;
});
if (st.e < 0) st.e = E.length - 1;
/* the view lives in the URL, so a reload keeps it; e=last follows new epochs */
function save() {
  if (!E.length) return;
  var h = '#e=' + (st.e === E.length - 1 ? 'last' : E[st.e].epoch) + '&p=' + st.p +
      '&l=' + st.l + '&h=' + st.h + ($('tt-auto').checked ? '&auto=1' : '');
  try { history.replaceState(null, '', h); } catch (x) { location.hash = h; }
}
function options(sel, labels, cur) {
  var same = sel.options.length === labels.length &&
      labels.every(function (t, i) { return sel.options[i].text === t; });
  if (!same) {
    sel.innerHTML = '';
    labels.forEach(function (t, i) { sel.add(new Option(t, i)); });
  }
  sel.value = cur;
}
function range(n) { return Array.from({length: n}, function (_, i) { return String(i); }); }
function drawMap(pr, A) {
  var tok = pr.tokens, T = tok.length, cs = Math.max(18, Math.min(44, Math.floor(440 / T)));
  ctx.font = '13px sans-serif';
  var lab = 12 + Math.max.apply(null, tok.map(function (t) {
    return ctx.measureText(t).width;
  }));
  var n = Math.ceil(lab + T * cs + 4), s = [];
  tok.forEach(function (t, j) {
    var c = lab + (j + 0.5) * cs;
    var turn = 'translate(' + c + ',' + (lab - 6) + ') rotate(-90)';
    s.push(el('text', {'class': 'k', 'data-j': j, 'dominant-baseline': 'middle',
                       transform: turn}, esc(t)));
    s.push(el('text', {'class': 'q', 'data-i': j, x: lab - 6, y: c, 'text-anchor': 'end',
                       'dominant-baseline': 'middle'}, esc(t)));
  });
  A.forEach(function (row, i) {
    row.forEach(function (w, j) {
      var x = lab + j * cs, y = lab + i * cs;
      s.push(el('rect', {'class': 'c', 'data-i': i, 'data-j': j, x: x, y: y, width: cs,
                         height: cs, fill: color(w)}));
      if (cs >= 34) /* room for the number */
        s.push(el('text', {x: x + cs / 2, y: y + cs / 2, 'text-anchor': 'middle',
                           'dominant-baseline': 'middle', 'font-size': 11,
                           'pointer-events': 'none', fill: w > 0.55 ? '#fff' : '#222'},
                  w.toFixed(2)));
    });
  });
  s.push(el('rect', {x: lab, y: lab, width: T * cs, height: T * cs, fill: 'none',
                     stroke: '#888', 'pointer-events': 'none'}));
  $('tt-map').innerHTML = el('svg', {width: n, height: n, 'font-size': 13,
                                     'font-family': 'sans-serif'}, s.join(''));
}
function highlight(i, j) {
  $('tt-map').querySelectorAll('text.q, text.k').forEach(function (t) {
    var q = t.classList.contains('q');
    t.classList.toggle('hl', q ? +t.dataset.i === i : +t.dataset.j === j);
  });
}
function hide() { tip.style.display = 'none'; highlight(-1, -1); }
$('tt-map').addEventListener('mousemove', function (ev) {
  var d = ev.target.dataset;
  if (ev.target.tagName !== 'rect' || !d || d.i === undefined) return hide();
  var ep = E[st.e], tok = ep.probes[st.p].tokens, A = head(ep, st.p, st.l, st.h);
  var i = +d.i, j = +d.j;
  tip.textContent = tok[i] + ' -> ' + tok[j] + ': ' + A[i][j].toFixed(3);
  tip.style.display = 'block';
  tip.style.left = ev.clientX + 14 + 'px';
  tip.style.top = ev.clientY + 14 + 'px';
  highlight(i, j);
});
$('tt-map').addEventListener('mouseleave', hide);
/* every head of this epoch and probe, small, with its mean row entropy; click to select */
function drawOverview(ep) {
  var box = $('tt-overview'), T = ep.probes[st.p].tokens.length;
  var px = Math.max(3, Math.floor(64 / T));
  box.innerHTML = '';
  box.style.gridTemplateColumns = 'repeat(' + ep.heads + ', auto)';
  for (let l = 0; l < ep.layers; l++) {
    for (let h = 0; h < ep.heads; h++) {
      var A = head(ep, st.p, l, h), c = document.createElement('canvas');
      var g = c.getContext('2d'), d = document.createElement('div');
      c.width = c.height = T * px;
      A.forEach(function (row, i) {
        row.forEach(function (w, j) {
          g.fillStyle = color(w);
          g.fillRect(j * px, i * px, px, px);
        });
      });
      d.className = 'tt-thumb' + (l === st.l && h === st.h ? ' sel' : '');
      d.title = 'layer ' + l + ', head ' + h + ': mean row entropy';
      d.appendChild(c);
      d.appendChild(document.createTextNode('L' + l + ' H' + h + ' \u00b7 ' +
                                            entropy(A).toFixed(2)));
      d.onclick = function () { st.l = l; st.h = h; render(); };
      box.appendChild(d);
    }
  }
}
/* the selected head's mean row entropy over the epochs, against uniform rows */
function drawEntropy(ep, pr) {
  var c = $('tt-ent'), g = c.getContext('2d'), W = c.width, H = c.height;
  var L = 36, R = 10, Tp = 10, B = 20, top = uniform(pr.tokens.length, ep.causal) || 1;
  var x = function (k) {
    return L + (E.length > 1 ? k / (E.length - 1) : 0.5) * (W - L - R);
  };
  var y = function (v) { return Tp + (1 - v / top) * (H - Tp - B); };
  g.clearRect(0, 0, W, H);
  g.font = '11px sans-serif';
  g.fillStyle = '#333';
  g.strokeStyle = '#bbb';
  g.strokeRect(L, Tp, W - L - R, H - Tp - B);
  g.fillText(top.toFixed(2), 2, y(top) + 4);
  g.fillText('0', 2, y(0));
  g.fillText('epoch ' + E[0].epoch, L, H - 5);
  g.textAlign = 'right';
  g.fillText(String(E[E.length - 1].epoch), W - R, H - 5);
  g.textAlign = 'left';
  g.setLineDash([4, 3]);
  g.beginPath();
  g.moveTo(L, y(top));
  g.lineTo(W - R, y(top));
  g.stroke();
  g.setLineDash([]);
  g.strokeStyle = '#2171b5';
  g.lineWidth = 2;
  g.beginPath();
  var pen = false;
  E.forEach(function (ep, k) {
    var A = head(ep, st.p, st.l, st.h), ok = A && A.length === pr.tokens.length;
    if (ok && pen) g.lineTo(x(k), y(entropy(A)));
    else if (ok) g.moveTo(x(k), y(entropy(A)));
    pen = ok;
  });
  g.stroke();
  g.lineWidth = 1;
  g.fillStyle = '#e6550d';
  g.beginPath();
  g.arc(x(st.e), y(entropy(head(E[st.e], st.p, st.l, st.h))), 4, 0, 2 * Math.PI);
  g.fill();
}
function render() {
  if (!E.length) {
    $('tt-map').textContent = 'No attention dumps yet.';
    return;
  }
  st.e = clamp(st.e, E.length);
  var ep = E[st.e];
  st.p = clamp(st.p, ep.probes.length);
  st.l = clamp(st.l, ep.layers);
  st.h = clamp(st.h, ep.heads);
  var pr = ep.probes[st.p], A = head(ep, st.p, st.l, st.h), tok = pr.tokens, T = tok.length;
  $('tt-epoch').max = E.length - 1;
  $('tt-epoch').value = st.e;
  $('tt-epoch-label').textContent =
      'epoch ' + ep.epoch + (st.e === E.length - 1 ? ' (latest)' : '');
  options($('tt-probe'), ep.probes.map(function (q, i) { return i + ': ' + q.text; }),
          st.p);
  options($('tt-layer'), range(ep.layers), st.l);
  options($('tt-head'), range(ep.heads), st.h);
  $('tt-title').textContent = '"' + pr.text + '", layer ' + st.l + ', head ' + st.h +
      ', epoch ' + ep.epoch;
  drawMap(pr, A);
  $('tt-stats').textContent = 'Rows: query tokens; columns: key tokens. Mean row entropy ' +
      entropy(A).toFixed(3) + ' nats (' + (ep.causal
        ? 'causal: row i sees i + 1 keys; uniform over them: ' + uniform(T, true).toFixed(3)
        : 'uniform: log ' + T + ' = ' + uniform(T, false).toFixed(3)) + ').';
  $('tt-focus').textContent = 'Strongest key per query: ' + A.map(function (row, i) {
    var j = row.indexOf(Math.max.apply(null, row));
    return tok[i] + ' -> ' + tok[j] + ' ' + row[j].toFixed(2);
  }).join(', ');
  drawEntropy(ep, pr);
  drawOverview(ep);
  save();
}
function stop() {
  clearInterval(timer);
  timer = null;
  $('tt-play').textContent = 'play';
}
function arm() {
  clearTimeout(reload);
  if ($('tt-auto').checked) reload = setTimeout(function () { location.reload(); }, 10000);
}
$('tt-epoch').addEventListener('input', function () {
  stop();
  st.e = +this.value;
  render();
});
['probe', 'layer', 'head'].forEach(function (k) {
  $('tt-' + k).addEventListener('change', function () {
    st[k[0]] = +this.value;
    render();
  });
});
$('tt-play').addEventListener('click', function () {
  if (timer) return stop();
  if (st.e >= E.length - 1) st.e = 0;
  render();
  $('tt-play').textContent = 'pause';
  timer = setInterval(function () {
    if (st.e >= E.length - 1) return stop();
    st.e++;
    render();
  }, 700);
});
document.addEventListener('keydown', function (ev) {
  if (/^(SELECT|INPUT)$/.test(ev.target.tagName)) return;
  if (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') return;
  stop();
  st.e += ev.key === 'ArrowRight' ? 1 : -1;
  render();
});
$('tt-auto').addEventListener('change', function () { save(); arm(); });
$('tt-bar').style.background = 'linear-gradient(to right,' +
    RAMP.map(function (c) { return 'rgb(' + c.join(',') + ')'; }).join(',') + ')';
render();
arm();
document.body.dataset.ttReady = '1';
