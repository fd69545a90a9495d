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

  // actButtons fills the fleet view's empty action cells (data-acts)
  // with their agent's stop and restart buttons, on a page that may act:
  // the server sends the cells bare, a big fleet's frames stay small.
  function actButtons(root) {
    if (!body.dataset.actions) return;
    root.querySelectorAll('td[data-acts]').forEach(function (td) {
      if (td.firstChild) return;
      var row = td.closest('tr[data-agent]');
      if (!row) return;
      ['stop', 'restart'].forEach(function (action) {
        var b = document.createElement('button');
        b.type = 'button';
        b.className = 'act';
        b.dataset.action = action;
        b.dataset.agent = row.dataset.agent;
        b.textContent = action;
        td.appendChild(b);
      });
    });
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
    actButtons(main);
    showScreen();
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

  // The screen view: what an agent's pane shows, read from the shim
  // (GET /agents/{id}/screen: a read, it never types) every 1.5 s while
  // the agent view shows it and the page is visible. The last read is
  // kept here, so the view's live re-renderings do not blank it.
  var shown = {agent: '', text: '', note: 'reading…'};
  var reading = false;
  function showScreen() {
    var pre = main && main.querySelector('pre[data-screen]');
    if (!pre) return;
    if (pre.dataset.screen !== shown.agent) { readScreen(); return; }
    pre.textContent = shown.text; // text, never markup
    var note = document.getElementById('screen-note');
    if (note) note.textContent = shown.note;
  }
  function readScreen() {
    var pre = main && main.querySelector('pre[data-screen]');
    if (!pre || reading || document.hidden) return;
    var agent = pre.dataset.screen;
    if (shown.agent !== agent) shown = {agent: agent, text: '', note: 'reading…'};
    reading = true;
    fetch('/agents/' + encodeURIComponent(agent) + '/screen', {credentials: 'same-origin', cache: 'no-store'}).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (shown.agent !== agent) return;
        if (r.ok) {
          shown.text = j.text || '';
          shown.note = 'pane ' + j.pane + ' · read ' + clock(Date.now());
        } else {
          var e = (j && j.error) || {code: String(r.status), message: r.statusText};
          shown.note = '⚠ ' + e.code + ': ' + e.message;
        }
        showScreen();
      });
    }).catch(function (e) {
      shown.note = '⚠ ' + e;
      showScreen();
    }).then(function () { reading = false; });
  }

  ages(document);
  if (main) actButtons(main);
  if (live) setInterval(function () { ages(document); }, 1000);
  if (live) { readScreen(); setInterval(readScreen, 1500); }

  // follow keeps the view live over its stream; a view switched in
  // place (go) follows its own.
  var es = null;
  function follow(url) {
    if (es) es.close();
    es = null;
    if (!url || !window.EventSource) return;
    var mine = new EventSource(url);
    es = mine;
    mine.addEventListener('open', function () { if (live) setStatus('live', '● live'); });
    mine.addEventListener('view', function (e) { replace(e.data); stamp(); });
    mine.addEventListener('rows', function (e) {
      var box = document.getElementById('log-rows');
      if (!box) return;
      box.insertAdjacentHTML('afterbegin', e.data);
      var cap = parseInt(box.dataset.cap, 10) || 200;
      while (box.children.length > cap) box.lastElementChild.remove();
      ages(box);
      stamp();
    });
    mine.addEventListener('end', function () {
      mine.close();
      setStatus('past', '◷ past');
    });
    mine.addEventListener('problem', function (e) { setStatus('down', '⚠ ' + e.data); });
    mine.addEventListener('error', function () {
      if (mine.readyState !== EventSource.CLOSED) setStatus('down', '○ reconnecting…');
    });
  }
  if (main) follow(main.dataset.stream);
  // A page left for another keeps its stream open in the browser's
  // back/forward cache, holding one of the six connections a browser
  // gives a host: after a few views the next page could not load. The
  // stream ends as the page is left, and starts again if it comes back.
  window.addEventListener('pagehide', function () { if (es) es.close(); es = null; });
  window.addEventListener('pageshow', function (e) { if (e.persisted && main) follow(main.dataset.stream); });

  // go shows another live view in place, without a reload: its first
  // rendering, then its stream (an action's result: the turn it sent).
  function go(query) {
    var q = new URLSearchParams(query);
    return fetch('/ui/view?' + q.toString(), {credentials: 'same-origin'}).then(function (r) {
      if (!r.ok) throw new Error('view: ' + r.status);
      return r.text();
    }).then(function (html) {
      history.pushState(null, '', '/?' + q.toString());
      main.dataset.view = q.get('view') || 'fleet';
      main.dataset.stream = '/ui/stream?' + q.toString();
      replace(html);
      follow(main.dataset.stream);
    });
  }
  window.addEventListener('popstate', function () { location.reload(); });

  // Actions: the shim's own API, with the page's CSRF token; each says
  // who acts (the page's identity), and the log records it.
  if (!body.dataset.actions) return;
  var result = document.getElementById('action-result');
  function say(ok, text, code) {
    if (!result) return;
    result.className = ok ? 'ok' : 'bad';
    result.dataset.code = code || '';
    result.textContent = text;
  }
  function act(path, payload) {
    return fetch(path, {
      method: 'POST', credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', 'X-Fleetd-Csrf': body.dataset.csrf},
      body: JSON.stringify(payload)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) {
          var e = (j && j.error) || {code: String(r.status), message: r.statusText};
          say(false, e.code + ': ' + e.message, e.code);
          throw e;
        }
        return j;
      });
    });
  }
  function send(to, text, command) {
    var m = {to: to, from: body.dataset.identity, wait: false};
    if (command) m.command = command; else m.text = text;
    return act('/message', m).then(function (j) {
      say(true, 'sent ' + j.id + ' to ' + to, 'sent');
      return go({view: 'turn', id: j.id});
    });
  }
  var sendForm = document.getElementById('send-form');
  if (sendForm) sendForm.addEventListener('submit', function (e) {
    e.preventDefault();
    var f = new FormData(sendForm);
    send(String(f.get('to')).trim(), String(f.get('text')), String(f.get('command')).trim()).then(function () {
      document.getElementById('send-text').value = '';
      document.getElementById('send-command').value = '';
    }, function () {});
  });
  var spawnForm = document.getElementById('spawn-form');
  if (spawnForm) spawnForm.addEventListener('submit', function (e) {
    e.preventDefault();
    var f = new FormData(spawnForm);
    var name = String(f.get('name')).trim();
    say(true, 'spawning ' + name + '…', 'pending');
    act('/agents', {role: String(f.get('role')).trim(), name: name, from: body.dataset.identity,
      from_role: String(f.get('from_role')).trim()}).then(function (j) {
      say(true, 'spawned ' + j.agent + ' in pane ' + j.pane, 'spawned');
    }, function () {});
  });
  document.addEventListener('click', function (e) {
    var b = e.target.closest && e.target.closest('button.act');
    if (!b) return;
    var who = body.dataset.identity;
    switch (b.dataset.action) {
      case 'stop':
        if (!confirm('Stop ' + b.dataset.agent + ' for good? Its pane is closed; turns queued for it fail.')) return;
        say(true, 'stopping ' + b.dataset.agent + '…', 'pending');
        act('/agents/' + encodeURIComponent(b.dataset.agent) + '/stop', {from: who}).then(function () {
          say(true, 'stopped ' + b.dataset.agent, 'stopped');
        }, function () {});
        break;
      case 'restart':
        if (!confirm('Restart ' + b.dataset.agent + '? A turn it is working on fails.')) return;
        say(true, 'restarting ' + b.dataset.agent + '…', 'pending');
        act('/agents/' + encodeURIComponent(b.dataset.agent) + '/restart', {from: who}).then(function (j) {
          say(true, 'restarted ' + b.dataset.agent + ' in pane ' + j.pane, 'restarted');
        }, function () {});
        break;
      case 'cancel':
        act('/message/' + encodeURIComponent(b.dataset.turn) + '/cancel', {from: who}).then(function () {
          say(true, 'cancelled ' + b.dataset.turn, 'cancelled');
        }, function () {});
        break;
      case 'answer':
        // The answer goes through the log to the agent's own gateway,
        // which types it only while the screen shows this dialog; the
        // view then drops the dialog live. One answer at a time.
        var box = b.closest('.dialog') || document;
        box.querySelectorAll('button.answer').forEach(function (o) { o.disabled = true; });
        say(true, 'answering ' + b.dataset.agent + ': ' + b.dataset.option + '. ' + b.dataset.label + '…', 'pending');
        act('/agents/' + encodeURIComponent(b.dataset.agent) + '/answer', {option: parseInt(b.dataset.option, 10), from: who}).then(function (j) {
          say(true, 'answered ' + j.agent + ': ' + j.option + '. ' + j.label, 'answered');
        }, function () {
          box.querySelectorAll('button.answer').forEach(function (o) { o.disabled = false; });
        });
        break;
      case 'resend':
        send(b.dataset.to, b.dataset.text, b.dataset.command).catch(function () {});
        break;
    }
  });
})();
