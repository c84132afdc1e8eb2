// flow Mission Control: follows a run or a log live over Server-Sent
// Events. The pages work without it; it only saves reloading them.
(function () {
  'use strict';
  if (!window.EventSource) { return; }

  function statusClass(s) { return 's-' + String(s).toLowerCase(); }

  function setBadge(el, status) {
    if (!el) { return; }
    el.textContent = status;
    el.className = 'badge ' + statusClass(status);
  }

  function byKey(key) {
    return document.querySelectorAll('[data-key="' + CSS.escape(key) + '"]');
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
    var name = cell();
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
      es = new EventSource(last === null ? url : setParam(url, param, last));
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

  var run = document.getElementById('run');
  if (run && run.dataset.events) {
    follow(run.dataset.events, 'after', {event: function (e) {
      var ev = JSON.parse(e.data);
      var ol = document.getElementById('timeline');
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
    }, status: function (e) {
      var s = JSON.parse(e.data);
      setBadge(document.getElementById('run-status'), s.status);
      var live = document.getElementById('run-live');
      if (live) { live.textContent = s.live; }
      var hook = document.getElementById('run-hook');
      if (hook) { hook.textContent = s.hook || ''; }
      var reason = document.getElementById('run-reason');
      if (reason) { reason.textContent = s.reason || ''; }
      (s.steps || []).forEach(function (row) {
        var els = Array.prototype.slice.call(byKey(row.key));
        if (row.instance && !els.some(function (el) { return el.tagName.toLowerCase() === 'tr'; })) {
          var added = addInstance(row);
          if (added) { els.push(added); }
        }
        els.forEach(function (el) {
          if (el.tagName.toLowerCase() === 'tr') {
            linkLog(el, row.log);
            el.className = statusClass(row.status) + (row.instance ? ' instance' : '');
            setBadge(el.querySelector('[data-col=status] .badge'), row.status);
            ['attempts', 'iteration', 'duration', 'verdict', 'progress', 'waits', 'error'].forEach(function (col) {
              var td = el.querySelector('[data-col=' + col + ']');
              if (td) { td.textContent = row[col] === undefined ? '' : String(row[col]); }
            });
          } else {
            var loop = el.classList.contains('loop') ? ' loop' : '';
            el.setAttribute('class', 'node' + loop + ' ' + statusClass(row.status));
            var st = el.querySelector('.state');
            if (st && !loop) { st.textContent = row.status; }
          }
        });
      });
      // A decision form goes once its step no longer waits.
      document.querySelectorAll('section.decide[data-waits]').forEach(function (sec) {
        (s.steps || []).forEach(function (row) {
          if (row.key === sec.dataset.waits && row.status !== 'WAITING_ON_HUMAN') { sec.hidden = true; }
        });
      });
    }});
  }

  var log = document.getElementById('log');
  if (log && log.dataset.tail) {
    follow(log.dataset.tail, 'offset', {
      log: function (e) {
        var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
        log.textContent += JSON.parse(e.data);
        if (atEnd) { log.scrollTop = log.scrollHeight; }
      },
      end: function (e, stop) { stop(); },
      // The step runs another session: its page shows that session's log.
      next: function (e, stop) { stop(); window.location.reload(); }
    });
  }
})();
