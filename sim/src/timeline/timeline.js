// The timeline of `drydock sim report`: reads the run from #run-data, draws its lanes and marks on
// one canvas (only the lanes and events in view, so 20,000 events stay quick), and explains the
// event clicked in #details. Every text of the run goes into the page as text, never as markup.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('run-data').textContent);
  if (data.error) { throw new Error(data.error); }
  var run = data.run, events = run.events, lanes = data.lanes, parents = data.parents;
  var styles = {};
  data.styles.forEach(function (s) { styles[s.kind] = s; });

  var LABEL_W = 230, AXIS_H = 40, LANE_H = 18, MIN_SPAN = 8;
  var n = events.length;

  // Where each event is: its index by seq, and the events of each lane in order.
  var bySeq = new Map();
  events.forEach(function (e, i) { bySeq.set(e.seq, i); });
  var laneOf = new Map();
  lanes.forEach(function (l, i) { laneOf.set(l.group + ':' + l.name, i); });
  var laneEvents = lanes.map(function () { return []; });
  events.forEach(function (e, i) {
    var placed = false;
    function put(key) {
      var li = laneOf.get(key);
      if (li !== undefined) { laneEvents[li].push(i); placed = true; }
    }
    if (e.object != null) { put('object:' + e.object); }
    if (e.container != null) { put('container:' + e.container); }
    if (e.process != null) { put('process:p' + e.process); }
    if (!placed) { put('run:run'); }
  });
  function faulty(e) { return (e.faults && e.faults.length > 0) || e.kind === 'fault'; }

  // What the filter matches: lanes by name, events by object, container, controller or key.
  var shownLanes = lanes.map(function (_, i) { return i; });
  var matches = null;
  function eventText(e) {
    var parts = [e.object || '', e.container || ''];
    if (e.cause) { parts.push(e.cause.controller, e.cause.key); }
    return parts.join('\n').toLowerCase();
  }
  function applyFilter(text) {
    var q = text.trim().toLowerCase();
    if (!q) {
      matches = null;
      shownLanes = lanes.map(function (_, i) { return i; });
    } else {
      matches = new Uint8Array(n);
      for (var i = 0; i < n; i++) { matches[i] = eventText(events[i]).indexOf(q) >= 0 ? 1 : 0; }
      shownLanes = [];
      lanes.forEach(function (l, li) {
        var hit = l.name.toLowerCase().indexOf(q) >= 0 || laneEvents[li].some(function (ei) { return matches[ei] === 1; });
        if (hit) { shownLanes.push(li); }
      });
    }
    layout();
  }

  // The view: events [x0, x1) by index across the plot's width.
  var view = { x0: 0, x1: Math.max(n, 1) };
  var selected = -1;
  var wrap = document.getElementById('timeline-wrap');
  var spacer = document.getElementById('timeline-spacer');
  var canvas = document.getElementById('timeline');
  var ctx = canvas.getContext('2d');
  var size = { w: 0, h: 0 };

  function layout() {
    var content = AXIS_H + shownLanes.length * LANE_H + 4;
    spacer.style.height = content + 'px';
    wrap.style.height = Math.max(160, Math.min(content + 2, Math.round(window.innerHeight * 0.62))) + 'px';
    draw();
  }
  function plotW() { return Math.max(size.w - LABEL_W - 8, 10); }
  function xOf(i) { return LABEL_W + (i + 0.5 - view.x0) / (view.x1 - view.x0) * plotW(); }
  function indexAt(px) { return view.x0 + (px - LABEL_W) / plotW() * (view.x1 - view.x0) - 0.5; }
  function lowerBound(list, value) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (list[mid] < value) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  }
  function seconds(nanos) {
    var s = Math.floor(nanos / 1e9), micros = Math.floor((nanos % 1e9) / 1e3);
    return s + '.' + String(micros).padStart(6, '0') + 's';
  }

  function shape(kind, x, y, colour, alpha) {
    ctx.globalAlpha = alpha;
    ctx.fillStyle = colour;
    ctx.strokeStyle = colour;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    switch (kind) {
      case 'diamond': ctx.moveTo(x, y - 5); ctx.lineTo(x + 5, y); ctx.lineTo(x, y + 5); ctx.lineTo(x - 5, y); ctx.closePath(); ctx.fill(); break;
      case 'square': ctx.fillRect(x - 4, y - 4, 8, 8); break;
      case 'square-open': ctx.strokeRect(x - 3.5, y - 3.5, 7, 7); break;
      case 'triangle-up': ctx.moveTo(x, y - 5); ctx.lineTo(x + 5, y + 4); ctx.lineTo(x - 5, y + 4); ctx.closePath(); ctx.fill(); break;
      case 'triangle-down': ctx.moveTo(x, y + 5); ctx.lineTo(x + 5, y - 4); ctx.lineTo(x - 5, y - 4); ctx.closePath(); ctx.fill(); break;
      case 'triangle-down-open': ctx.moveTo(x, y + 5); ctx.lineTo(x + 5, y - 4); ctx.lineTo(x - 5, y - 4); ctx.closePath(); ctx.stroke(); break;
      case 'circle': ctx.arc(x, y, 4, 0, 2 * Math.PI); ctx.fill(); break;
      case 'cross': ctx.lineWidth = 2; ctx.moveTo(x - 4, y - 4); ctx.lineTo(x + 4, y + 4); ctx.moveTo(x + 4, y - 4); ctx.lineTo(x - 4, y + 4); ctx.stroke(); break;
      case 'star':
        ctx.moveTo(x, y - 6); ctx.lineTo(x + 1.8, y - 1.8); ctx.lineTo(x + 6, y); ctx.lineTo(x + 1.8, y + 1.8);
        ctx.lineTo(x, y + 6); ctx.lineTo(x - 1.8, y + 1.8); ctx.lineTo(x - 6, y); ctx.lineTo(x - 1.8, y - 1.8); ctx.closePath(); ctx.fill(); break;
      case 'bar': ctx.fillRect(x - 1.5, y - 6, 3, 12); break;
      default: ctx.arc(x, y, 2, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.globalAlpha = 1;
  }

  function draw() {
    var dpr = window.devicePixelRatio || 1;
    var w = wrap.clientWidth, h = wrap.clientHeight;
    if (w !== size.w || h !== size.h) {
      size.w = w; size.h = h;
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
      canvas.style.width = w + 'px'; canvas.style.height = h + 'px';
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    var top = wrap.scrollTop;
    var first = Math.max(0, Math.floor(view.x0) - 1), last = Math.min(n - 1, Math.ceil(view.x1) + 1);
    var marks = 0, drawnLanes = 0;

    // Lanes: background, label, marks (one per pixel column and kind, so dense runs stay quick).
    for (var r = 0; r < shownLanes.length; r++) {
      var y0 = AXIS_H + r * LANE_H - top;
      if (y0 + LANE_H < AXIS_H || y0 > h) { continue; }
      var li = shownLanes[r], lane = lanes[li];
      drawnLanes++;
      ctx.fillStyle = lane.violated ? '#fde3e1' : (r % 2 ? '#f6f7f9' : '#ffffff');
      ctx.fillRect(0, y0, w, LANE_H);
      var list = laneEvents[li], yc = y0 + LANE_H / 2;
      var lastPx = -1, lastKind = '';
      for (var k = lowerBound(list, first); k < list.length && list[k] <= last; k++) {
        var ei = list[k], e = events[ei], x = xOf(ei);
        var px = Math.round(x);
        if (px === lastPx && e.kind === lastKind && !faulty(e) && ei !== selected) { continue; }
        lastPx = px; lastKind = e.kind;
        var style = styles[e.kind] || styles.other;
        var alpha = matches && !matches[ei] ? 0.18 : 1;
        if (faulty(e)) {
          ctx.globalAlpha = alpha * 0.25; ctx.fillStyle = '#d62728'; ctx.fillRect(px - 4, y0 + 1, 8, LANE_H - 2); ctx.globalAlpha = 1;
        }
        shape(style.shape, x, yc, style.colour, alpha);
        if (faulty(e)) {
          ctx.globalAlpha = alpha; ctx.strokeStyle = '#d62728'; ctx.lineWidth = 1.5;
          ctx.beginPath(); ctx.arc(x, yc, 7, 0, 2 * Math.PI); ctx.stroke(); ctx.globalAlpha = 1;
        }
        if (ei === selected) {
          ctx.strokeStyle = '#111'; ctx.lineWidth = 2; ctx.beginPath(); ctx.arc(x, yc, 8, 0, 2 * Math.PI); ctx.stroke();
        }
        marks++;
      }
      // The label column, over the marks.
      ctx.fillStyle = lane.violated ? '#fbd3d0' : (r % 2 ? '#eef0f3' : '#f8f9fa');
      ctx.fillRect(0, y0, LABEL_W, LANE_H);
      ctx.fillStyle = lane.violated ? '#a40e0e' : (lane.group === 'process' || lane.group === 'run' ? '#333' : '#1d1d1f');
      ctx.font = (lane.violated ? 'bold ' : '') + '12px ui-monospace, "DejaVu Sans Mono", monospace';
      ctx.textBaseline = 'middle';
      var tag = lane.group === 'container' ? '\u25a2 ' : lane.group === 'process' ? '\u2699 ' : lane.group === 'run' ? '\u2022 ' : '';
      ctx.fillText(fit(tag + lane.name, LABEL_W - 8), 4, yc);
    }
    ctx.strokeStyle = '#c9c9cf'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(LABEL_W + 0.5, AXIS_H); ctx.lineTo(LABEL_W + 0.5, h); ctx.stroke();

    // The selected event and the violations: vertical lines across the lanes.
    if (selected >= 0 && selected >= first && selected <= last) {
      ctx.strokeStyle = 'rgba(31,95,191,0.55)'; ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(xOf(selected), AXIS_H); ctx.lineTo(xOf(selected), h); ctx.stroke();
    }
    run.violations.forEach(function (v) {
      var vi = bySeq.get(v.seq);
      if (vi === undefined || vi < first || vi > last) { return; }
      var x = xOf(vi);
      ctx.strokeStyle = '#c00'; ctx.lineWidth = 2; ctx.setLineDash([5, 3]);
      ctx.beginPath(); ctx.moveTo(x, AXIS_H - 14); ctx.lineTo(x, h); ctx.stroke(); ctx.setLineDash([]);
    });

    // The axis: time ticks (the time of the event under each tick), fault ticks, the violation.
    ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, w, AXIS_H);
    ctx.fillStyle = '#6b6b70'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'alphabetic';
    ctx.fillText('event # / simulated time \u2192', 4, 14);
    ctx.fillText(shownLanes.length + ' of ' + lanes.length + ' lanes', 4, 30);
    // Ticks on whole events, every 1, 2 or 5 times a power of ten, about 120 px apart.
    var want = (view.x1 - view.x0) / Math.max(1, Math.floor(plotW() / 120));
    var step = 1;
    while (step * 10 <= want) { step *= 10; }
    step = want <= step ? step : want <= 2 * step ? 2 * step : want <= 5 * step ? 5 * step : 10 * step;
    ctx.strokeStyle = '#c9c9cf'; ctx.lineWidth = 1; ctx.textAlign = 'center';
    for (var ti = Math.ceil(view.x0 / step) * step; ti < view.x1 && ti < n; ti += step) {
      var tx = xOf(ti);
      ctx.beginPath(); ctx.moveTo(Math.round(tx) + 0.5, AXIS_H - 6); ctx.lineTo(Math.round(tx) + 0.5, AXIS_H); ctx.stroke();
      ctx.fillStyle = '#333';
      ctx.fillText(seconds(events[ti].at_nanos), tx, 14);
      ctx.fillStyle = '#8a8a90';
      ctx.fillText('#' + events[ti].seq, tx, 26);
    }
    ctx.textAlign = 'left';
    for (var fi = first; fi <= last; fi++) {
      if (faulty(events[fi])) { ctx.fillStyle = '#d62728'; ctx.fillRect(Math.round(xOf(fi)) - 1, AXIS_H - 5, 2, 5); }
    }
    run.violations.forEach(function (v) {
      var vi = bySeq.get(v.seq);
      if (vi === undefined || vi < first || vi > last) { return; }
      var x = xOf(vi), label = '\u26a0 ' + v.invariant;
      ctx.font = 'bold 11px system-ui, sans-serif';
      var tw = ctx.measureText(label).width;
      var lx = Math.min(Math.max(x - tw / 2, LABEL_W), w - tw - 4);
      ctx.fillStyle = '#fff'; ctx.fillRect(lx - 3, AXIS_H - 14, tw + 6, 13);
      ctx.fillStyle = '#c00'; ctx.fillText(label, lx, AXIS_H - 4);
    });
    ctx.strokeStyle = '#c9c9cf'; ctx.beginPath(); ctx.moveTo(0, AXIS_H + 0.5); ctx.lineTo(w, AXIS_H + 0.5); ctx.stroke();

    canvas.setAttribute('data-marks', String(marks));
    canvas.setAttribute('data-lanes', String(drawnLanes));
    var range = document.getElementById('view-range');
    if (n > 0) {
      var a = Math.max(0, Math.floor(view.x0)), b = Math.min(n - 1, Math.ceil(view.x1) - 1);
      range.textContent = 'events #' + events[a].seq + '\u2013#' + events[b].seq + ' of ' + n;
    }
  }
  // A lane's name cut to `width`: an object's kind loses its end first (`Physical…/ns/name`), so
  // the name, the part that tells lanes apart, stays whole as long as it can.
  function fit(text, width) {
    if (ctx.measureText(text).width <= width) { return text; }
    var slash = text.indexOf('/');
    if (slash > 0) {
      var head = text.slice(0, slash), tail = text.slice(slash);
      for (var keep = head.length - 1; keep >= 2; keep--) {
        var cut = head.slice(0, keep) + '\u2026' + tail;
        if (ctx.measureText(cut).width <= width) { return cut; }
      }
      text = head.slice(0, 2) + '\u2026' + tail;
    }
    var lo = 0, hi = text.length;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (ctx.measureText('\u2026' + text.slice(text.length - mid)).width <= width) { lo = mid; } else { hi = mid - 1; }
    }
    return '\u2026' + text.slice(text.length - lo);
  }

  // Zoom and pan.
  function setView(x0, x1) {
    var span = Math.min(Math.max(x1 - x0, Math.min(MIN_SPAN, Math.max(n, 1))), Math.max(n, 1));
    x0 = Math.min(Math.max(x0, 0), Math.max(n, 1) - span);
    view.x0 = x0; view.x1 = x0 + span;
    draw();
  }
  function zoom(factor, at) {
    var span = view.x1 - view.x0, centre = at === undefined ? (view.x0 + view.x1) / 2 : at;
    var share = (centre - view.x0) / span, next = span * factor;
    setView(centre - share * next, centre - share * next + next);
  }
  function centreOn(i) {
    if (i >= view.x0 && i < view.x1 - 1) { return; }
    var span = view.x1 - view.x0;
    setView(i - span / 2, i + span / 2);
  }

  // The details of one event: what it was, changed, and what set it off.
  var details = document.getElementById('details');
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }
  function link(i, text) {
    var a = el('a', text);
    a.href = '#';
    a.setAttribute('data-seq', String(events[i].seq));
    return a;
  }
  function row(table, name, value) {
    var tr = el('tr');
    tr.appendChild(el('td', name));
    var td = el('td');
    if (value instanceof Node) { td.appendChild(value); } else { td.textContent = String(value); }
    tr.appendChild(td);
    table.appendChild(tr);
  }
  function summary(i) {
    var e = events[i];
    return '#' + e.seq + ' ' + e.kind + ': ' + e.line;
  }
  function chain(i) {
    var out = [], seen = new Set([i]), cur = i;
    while (out.length < 500) {
      var p = parents[cur];
      if (p === null || p === undefined) { break; }
      var j = bySeq.get(p);
      if (j === undefined || seen.has(j)) { break; }
      var why = events[cur].cause && events[cur].cause.trigger_seq === p
        ? 'triggered the reconcile of' : 'wrote the version delivered by';
      out.push({ index: j, why: why, of: cur });
      seen.add(j); cur = j;
    }
    return out;
  }
  function showDetails(i) {
    var e = events[i];
    details.textContent = '';
    details.appendChild(el('h2', 'Event #' + e.seq + ' at ' + seconds(e.at_nanos)));
    details.appendChild(el('div', e.line, 'line mono'));
    var facts = el('table');
    row(facts, 'kind', (styles[e.kind] || styles.other).label + ' (' + e.kind + ')');
    if (e.process != null) { row(facts, 'process', 'p' + e.process); }
    if (e.object != null) { row(facts, 'object', e.object); }
    if (e.container != null) { row(facts, 'container', e.container); }
    if (e.faults && e.faults.length) { row(facts, 'faults', el('span', e.faults.join(', '), 'faults')); }
    details.appendChild(facts);
    if (e.diff && e.diff.length) {
      details.appendChild(el('h3', 'What it changed'));
      var diff = el('table', null, 'diff mono');
      e.diff.forEach(function (c) {
        var change = el('span');
        change.appendChild(el('span', c.before == null ? '(none)' : c.before, 'before'));
        change.appendChild(document.createTextNode(' \u2192 '));
        change.appendChild(el('span', c.after == null ? '(removed)' : c.after, 'after'));
        row(diff, c.path, change);
      });
      details.appendChild(diff);
    }
    if (e.cause) {
      var c = e.cause;
      details.appendChild(el('h3', 'Cause'));
      var cause = el('table');
      row(cause, 'controller', c.controller + ' in p' + c.process);
      row(cause, 'key', c.key);
      row(cause, 'reconcile', '#' + c.reconcile);
      if (c.trigger != null) { row(cause, 'trigger', c.trigger); }
      [['trigger event', c.trigger_seq], ['issued at', c.issued_seq]].forEach(function (pair) {
        var at = pair[1] == null ? undefined : bySeq.get(pair[1]);
        if (at !== undefined) { row(cause, pair[0], link(at, summary(at))); }
      });
      details.appendChild(cause);
    }
    var steps = chain(i);
    details.appendChild(el('h3', 'Causal chain'));
    if (!steps.length) {
      details.appendChild(el('p', 'The trace shows nothing that set this event off.', 'hint'));
    } else {
      var list = el('ol', null, 'chain');
      steps.forEach(function (s) {
        var li = el('li');
        li.appendChild(link(s.index, summary(s.index)));
        li.appendChild(el('div', s.why + ' #' + events[s.of].seq, 'seq'));
        list.appendChild(li);
      });
      details.appendChild(list);
    }
    if (e.logs && e.logs.length) {
      details.appendChild(el('h3', 'Engine logs'));
      details.appendChild(el('pre', e.logs.join('\n'), 'mono'));
    }
  }
  function select(i, scroll) {
    if (i < 0 || i >= n) { return; }
    selected = i;
    showDetails(i);
    if (scroll) {
      centreOn(i);
      var e = events[i];
      var key = e.object != null ? 'object:' + e.object : e.container != null ? 'container:' + e.container
        : e.process != null ? 'process:p' + e.process : 'run:run';
      var r = shownLanes.indexOf(laneOf.get(key));
      if (r >= 0) {
        var y = AXIS_H + r * LANE_H;
        if (y < wrap.scrollTop + AXIS_H || y > wrap.scrollTop + wrap.clientHeight - LANE_H) {
          wrap.scrollTop = Math.max(0, y - wrap.clientHeight / 2);
        }
      }
    }
    draw();
  }

  // The event under a point of the canvas: the nearest mark of that lane within a few pixels.
  function hit(px, py) {
    var r = Math.floor((py + wrap.scrollTop - AXIS_H) / LANE_H);
    if (py < AXIS_H || r < 0 || r >= shownLanes.length || px < LABEL_W) { return -1; }
    var list = laneEvents[shownLanes[r]], at = indexAt(px);
    var k = lowerBound(list, Math.floor(at)), best = -1, bestD = 8;
    for (var j = Math.max(0, k - 40); j < Math.min(list.length, k + 40); j++) {
      var d = Math.abs(xOf(list[j]) - px);
      if (d < bestD) { bestD = d; best = list[j]; }
    }
    return best;
  }

  var drag = null;
  canvas.addEventListener('mousedown', function (ev) {
    drag = { x: ev.clientX, x0: view.x0, x1: view.x1, moved: false };
  });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) { return; }
    var dx = ev.clientX - drag.x;
    if (Math.abs(dx) > 3) { drag.moved = true; }
    if (drag.moved) {
      var shift = dx / plotW() * (drag.x1 - drag.x0);
      setView(drag.x0 - shift, drag.x1 - shift);
    }
  });
  window.addEventListener('mouseup', function (ev) {
    if (!drag) { return; }
    var moved = drag.moved;
    drag = null;
    if (!moved && ev.target === canvas) {
      var box = canvas.getBoundingClientRect();
      var i = hit(ev.clientX - box.left, ev.clientY - box.top);
      if (i >= 0) { select(i, false); }
    }
  });
  canvas.addEventListener('wheel', function (ev) {
    var box = canvas.getBoundingClientRect();
    if (ev.ctrlKey || ev.metaKey) {
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, indexAt(ev.clientX - box.left));
    } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      ev.preventDefault();
      var d = (ev.shiftKey ? ev.deltaY : ev.deltaX) / plotW() * (view.x1 - view.x0);
      setView(view.x0 + d, view.x1 + d);
    }
  }, { passive: false });
  wrap.addEventListener('scroll', draw);
  window.addEventListener('resize', layout);
  document.addEventListener('click', function (ev) {
    var a = ev.target.closest ? ev.target.closest('a[data-seq]') : null;
    if (!a) { return; }
    ev.preventDefault();
    var i = bySeq.get(Number(a.getAttribute('data-seq')));
    if (i !== undefined) { select(i, true); }
  });
  document.getElementById('filter').addEventListener('input', function (ev) { applyFilter(ev.target.value); });
  document.getElementById('zoom-fit').addEventListener('click', function () { setView(0, n); });
  document.getElementById('zoom-in').addEventListener('click', function () { zoom(0.5); });
  document.getElementById('zoom-out').addEventListener('click', function () { zoom(2); });
  function aroundViolation() {
    var v = run.violations[0];
    var vi = v ? bySeq.get(v.seq) : undefined;
    if (vi === undefined) { return; }
    var span = Math.min(Math.max(n / 10, 200), n);
    setView(vi - span * 0.8, vi + span * 0.2);
  }
  document.getElementById('zoom-violation').addEventListener('click', aroundViolation);

  // First view: the whole run, with the event the address names (`#seq=N`, and `filter=TEXT`
  // for the filter box, as in `report.html#seq=12&filter=web`) or else the last event of the
  // violation's objects before it selected.
  var asked = new URLSearchParams(window.location.hash.replace(/^#/, ''));
  var filterBox = document.getElementById('filter');
  if (asked.get('filter')) {
    filterBox.value = asked.get('filter');
    applyFilter(filterBox.value);
  } else {
    layout();
  }
  var pick = asked.get('seq') === null ? undefined : bySeq.get(Number(asked.get('seq')));
  var firstViolation = run.violations[0];
  if (pick === undefined && firstViolation) {
    var named = new Set(firstViolation.objects);
    pick = bySeq.get(firstViolation.seq);
    for (var i = pick === undefined ? n - 1 : pick; i >= 0; i--) {
      if (named.has(events[i].object) || named.has(events[i].container)) { pick = i; break; }
    }
  }
  if (pick !== undefined) { select(pick, true); }
  document.body.setAttribute('data-ready', 'true');
})();
