// fleetd dashboard: keeps the server-rendered view live over server-sent
// events, ages current, and the time control in the browser's own zone.
// Plain JavaScript, no build step, no library.
(function () {
  'use strict';
  var body = document.body;
  var main = document.getElementById('view');
  var status = document.getElementById('status');
  var updated = document.getElementById('updated');
  var live = body.dataset.live === 'true';
  var pastNow = Date.parse(body.dataset.now || '');

  function now() { return live ? Date.now() : pastNow; }

  function pad(n, w) { n = String(n); while (n.length < (w || 2)) n = '0' + n; return n; }

  // clock is a time of day in the browser's zone, to the millisecond.
  function clock(ms) {
    var d = new Date(ms);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + '.' + pad(d.getMilliseconds(), 3);
  }

  function ago(ms) {
    var s = Math.floor(ms / 1000);
    if (!(s >= 1)) return 'now';
    if (s < 60) return s + 's ago';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm ago';
    var h = Math.floor(m / 60);
    if (h < 48) return h + 'h ago';
    return Math.floor(h / 24) + 'd ago';
  }

  // ages rewrites every <time data-t> as an age against now (the clock
  // live, the point of a view of the past).
  function ages(root) {
    var n = now();
    (root || document).querySelectorAll('time[data-t]').forEach(function (el) {
      var t = Date.parse(el.dataset.t);
      if (isNaN(t)) return;
      el.textContent = ago(n - t);
      el.title = new Date(t).toLocaleString() + '.' + pad(new Date(t).getMilliseconds(), 3);
    });
  }

  function setStatus(cls, text) {
    if (!status) return;
    status.className = cls;
    status.textContent = text;
  }

  function stamp() {
    if (updated) updated.textContent = 'updated ' + clock(Date.now());
  }

  // replace swaps the view for a new rendering, keeping what the reader
  // opened (details) open.
  function replace(html) {
    var open = {};
    main.querySelectorAll('details[open][id]').forEach(function (d) { open[d.id] = true; });
    main.innerHTML = html;
    Object.keys(open).forEach(function (id) {
      var d = document.getElementById(id);
      if (d) d.open = true;
    });
    ages(main);
  }

  // The time control: shown and chosen in the browser's zone, sent as
  // an instant.
  var form = document.getElementById('travel');
  var at = document.getElementById('at');
  if (form && at) {
    var iso = Date.parse(at.dataset.iso || '');
    var d = new Date(isNaN(iso) ? Date.now() : iso);
    at.value = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + clock(d.getTime());
    form.addEventListener('submit', function (e) {
      if (!at.value) return;
      var t = new Date(at.value); // no zone: the browser's own
      if (isNaN(t.getTime())) return;
      e.preventDefault();
      var q = new URLSearchParams(new FormData(form));
      q.set('at', t.toISOString());
      location.search = q.toString();
    });
  }
  var travelAt = document.getElementById('travel-at');
  if (travelAt && !isNaN(Date.parse(travelAt.dataset.t))) {
    travelAt.textContent = clock(Date.parse(travelAt.dataset.t));
    travelAt.removeAttribute('data-t');
  }

  ages(document);
  if (live) setInterval(function () { ages(document); }, 1000);

  if (!main || !main.dataset.stream || !window.EventSource) return;
  var es = new EventSource(main.dataset.stream);
  es.addEventListener('open', function () { if (live) setStatus('live', '● live'); });
  es.addEventListener('view', function (e) { replace(e.data); stamp(); });
  es.addEventListener('rows', function (e) {
    var box = document.getElementById('log-rows');
    if (!box) return;
    box.insertAdjacentHTML('afterbegin', e.data);
    var cap = parseInt(box.dataset.cap, 10) || 200;
    while (box.children.length > cap) box.lastElementChild.remove();
    ages(box);
    stamp();
  });
  es.addEventListener('end', function () {
    es.close();
    setStatus('past', '◷ past');
  });
  es.addEventListener('problem', function (e) { setStatus('down', '⚠ ' + e.data); });
  es.addEventListener('error', function () {
    if (es.readyState !== EventSource.CLOSED) setStatus('down', '○ reconnecting…');
  });
})();
