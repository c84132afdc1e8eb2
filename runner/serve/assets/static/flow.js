// flow Mission Control: keeps its pages live over Server-Sent Events.
// The pages work without it — each is whole as the server renders it —
// it only saves reloading them: the server sends the parts of a page
// that changed, rendered, and this puts them in place.
(function () {
  'use strict';

  var csrf = (document.querySelector('meta[name="csrf"]') || {}).content || '';

  // fillCSRF gives the forms of parts the server rendered for every
  // page alike this page's CSRF token.
  function fillCSRF(root) {
    root.querySelectorAll('input[name="csrf"]').forEach(function (i) {
      if (!i.value) { i.value = csrf; }
    });
  }

  // goDuration writes seconds as Go writes a duration rounded to the
  // second: 45s, 1m5s, 1h0m5s.
  function goDuration(sec) {
    sec = Math.max(0, Math.round(sec));
    var h = Math.floor(sec / 3600), m = Math.floor(sec % 3600 / 60), s = sec % 60;
    if (h) { return h + 'h' + m + 'm' + s + 's'; }
    if (m) { return m + 'm' + s + 's'; }
    return s + 's';
  }

  // Durations of what runs count on, every second, from data-since.
  function tick() {
    var now = Date.now();
    document.querySelectorAll('[data-since]').forEach(function (el) {
      var t = Date.parse(el.dataset.since);
      if (isNaN(t)) { return; }
      var d = goDuration((now - t) / 1000);
      if (el.id === 'log-state') {
        var text = document.getElementById('log-state-text');
        if (text) { text.textContent = 'running for ' + d; }
        return;
      }
      el.textContent = d;
    });
  }
  setInterval(tick, 1000);

  if (!window.EventSource) { return; }

  function statusClass(s) { return 's-' + String(s).toLowerCase(); }

  function setBadge(el, status, cls) {
    if (!el) { return; }
    el.textContent = status;
    el.className = 'badge ' + (cls || statusClass(status));
  }

  // cell returns a table cell of a step's row.
  function cell(col, extra) {
    var td = document.createElement('td');
    if (col) { td.dataset.col = col; }
    if (extra) { td.className = extra; }
    return td;
  }

  // addInstance adds the row of a loop's instance that appeared since
  // the page was made (a loop's items are known once it starts): after
  // its loop's row and the instances already there. A loop whose row is
  // not on this page of the table gets none.
  function addInstance(row) {
    var open = row.key.indexOf('[');
    if (open < 0) { return null; }
    var loop = row.key.slice(0, open);
    var at = document.querySelector('#steps tr[data-key="' + CSS.escape(loop) + '"]');
    if (!at) { return null; }
    while (at.nextElementSibling && at.nextElementSibling.dataset.key.indexOf(loop + '[') === 0) {
      at = at.nextElementSibling;
    }
    var tr = document.createElement('tr');
    tr.dataset.key = row.key;
    var name = cell(null, 'key');
    name.textContent = row.key;
    var badge = document.createElement('span');
    badge.className = 'badge';
    var status = cell('status');
    status.appendChild(badge);
    tr.append(name, status, cell('attempts'), cell('iteration'), cell('duration'), cell('verdict'),
      cell('progress'), cell('waits', 'waits'), cell('error', 'error'));
    at.after(tr);
    return tr;
  }

  // linkLog links a row's step name to its log once it has one.
  function linkLog(tr, href) {
    var name = tr.firstElementChild;
    if (!href || !name || name.querySelector('a')) { return; }
    var a = document.createElement('a');
    a.href = href;
    a.textContent = name.textContent;
    name.textContent = '';
    name.appendChild(a);
  }

  // setParam returns url with its query parameter name set to value.
  function setParam(url, name, value) {
    var u = new URL(url, window.location.href);
    u.searchParams.set(name, value);
    return u.pathname + u.search;
  }

  // follow keeps a stream open while its page is shown, and calls
  // handlers[name](event, stop) for each event of that name; stop ends
  // the stream. A hidden tab or a page left for another closes it: a
  // browser keeps at most six connections to a server, and each tab, or
  // page kept for going back, would hold one. It opens again from where
  // it stopped: param, a query parameter of url, is set to the id of
  // the last event.
  function follow(url, param, handlers) {
    var last = null, es = null, done = false;
    function close() {
      if (es) { es.close(); es = null; }
    }
    function stop() {
      done = true;
      close();
    }
    function open() {
      if (es || done) { return; }
      es = new EventSource(last === null || !param ? url : setParam(url, param, last));
      Object.keys(handlers).forEach(function (name) {
        es.addEventListener(name, function (e) {
          if (e.lastEventId) { last = e.lastEventId; }
          handlers[name](e, stop);
        });
      });
    }
    document.addEventListener('visibilitychange', function () {
      if (document.visibilityState === 'hidden') { close(); } else { open(); }
    });
    window.addEventListener('pagehide', close);
    window.addEventListener('pageshow', function (e) { if (e.persisted) { open(); } });
    open();
  }

  // putPart replaces a part of the page with what the server rendered,
  // keeping what a person was typing in its forms.
  function putPart(name, html) {
    var el = document.getElementById('part-' + name);
    if (!el || el.dataset.html === html) { return; }
    var typed = {};
    el.querySelectorAll('input:not([type=hidden]), textarea').forEach(function (i) {
      var sec = i.closest('[data-waits]');
      typed[(sec ? sec.dataset.waits : '') + ' ' + i.name] = i.value;
    });
    var focused = document.activeElement && el.contains(document.activeElement) ? document.activeElement.name : null;
    el.innerHTML = html;
    el.dataset.html = html;
    fillCSRF(el);
    el.querySelectorAll('input:not([type=hidden]), textarea').forEach(function (i) {
      var sec = i.closest('[data-waits]');
      var k = (sec ? sec.dataset.waits : '') + ' ' + i.name;
      if (k in typed) { i.value = typed[k]; }
      if (focused && i.name === focused) { i.focus(); }
    });
  }

  var maxEvents = 500;

  var run = document.getElementById('run');
  if (run && run.dataset.events) {
    follow(run.dataset.events, 'after', {event: function (e) {
      var ev = JSON.parse(e.data);
      var ol = document.getElementById('events');
      if (!ol || document.getElementById('ev-' + ev.seq)) { return; }
      var li = document.createElement('li');
      li.id = 'ev-' + ev.seq;
      var t = document.createElement('time');
      t.textContent = ev.at;
      var b = document.createElement('b');
      b.textContent = ev.type;
      var c = document.createElement('code');
      c.textContent = ev.data || '';
      li.append(t, ' ', b, ' ' + (ev.step || '') + ' ', c);
      ol.appendChild(li);
      while (ol.children.length > maxEvents) { ol.removeChild(ol.firstElementChild); }
    }, status: function (e) {
      var s = JSON.parse(e.data);
      (s.steps || []).forEach(function (row) {
        var tr = document.querySelector('#steps tr[data-key="' + CSS.escape(row.key) + '"]');
        if (!tr && row.instance) { tr = addInstance(row); }
        if (!tr) { return; }
        linkLog(tr, row.log);
        var cls = row['class'] || statusClass(row.status);
        tr.className = cls + (row.instance ? ' instance' : '');
        setBadge(tr.querySelector('[data-col=status] .badge'), row.status, cls);
        ['attempts', 'iteration', 'duration', 'verdict', 'progress', 'waits', 'error'].forEach(function (col) {
          var td = tr.querySelector('[data-col=' + col + ']');
          if (td) { td.textContent = row[col] === undefined ? '' : String(row[col]); }
        });
        var dur = tr.querySelector('[data-col=duration]');
        if (dur) {
          if (row.since) { dur.dataset.since = row.since; } else { delete dur.dataset.since; }
        }
      });
    }, parts: function (e) {
      var parts = JSON.parse(e.data);
      Object.keys(parts).forEach(function (name) { putPart(name, parts[name]); });
    }});
  }

  var list = document.getElementById('runs-list');
  if (list && list.dataset.live) {
    var title = document.title;
    follow(list.dataset.live, null, {list: function (e) {
      var l = JSON.parse(e.data);
      if (list.dataset.html !== l.html) {
        list.innerHTML = l.html;
        list.dataset.html = l.html;
        fillCSRF(list);
      }
      document.title = (l.waiting ? '(' + l.waiting + ') ' : '') + title;
    }});
  }

  var log = document.getElementById('log');
  if (log) {
    var box = document.getElementById('follow');
    var atEnd = function () { return log.scrollTop + log.clientHeight >= log.scrollHeight - 8; };
    var toEnd = function () { log.scrollTop = log.scrollHeight; };
    // A log opens at its end: its newest lines are what matters.
    toEnd();
    if (log.dataset.tail && box) {
      box.closest('label').hidden = false;
      // Scrolling up stops following; scrolling back to the end, or
      // ticking the box, follows again.
      log.addEventListener('scroll', function () { box.checked = atEnd(); });
      box.addEventListener('change', function () { if (box.checked) { toEnd(); } });
      follow(log.dataset.tail, 'offset', {
        log: function (e) {
          log.textContent += JSON.parse(e.data);
          if (box.checked) { toEnd(); }
        },
        end: function (e, stop) {
          stop();
          var st = JSON.parse(e.data);
          var badge = document.getElementById('log-state');
          if (badge) {
            badge.textContent = st.state;
            badge.className = 'badge s-' + st.state;
            delete badge.dataset.since;
          }
          var text = document.getElementById('log-state-text');
          if (text) { text.textContent = st.text; }
          box.closest('label').hidden = true;
        },
        // The step runs another session: its page shows that session's
        // log.
        next: function (e, stop) { stop(); window.location.href = window.location.pathname; }
      });
    }
  }
})();
