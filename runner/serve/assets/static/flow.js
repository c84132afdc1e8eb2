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

  var run = document.getElementById('run');
  if (run && run.dataset.events) {
    var es = new EventSource(run.dataset.events);
    es.addEventListener('event', function (e) {
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
    });
    es.addEventListener('status', function (e) {
      var s = JSON.parse(e.data);
      setBadge(document.getElementById('run-status'), s.status);
      var live = document.getElementById('run-live');
      if (live) { live.textContent = s.live; }
      var hook = document.getElementById('run-hook');
      if (hook) { hook.textContent = s.hook || ''; }
      var reason = document.getElementById('run-reason');
      if (reason) { reason.textContent = s.reason || ''; }
      (s.steps || []).forEach(function (row) {
        byKey(row.key).forEach(function (el) {
          if (el.tagName.toLowerCase() === 'tr') {
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
    });
  }

  var log = document.getElementById('log');
  if (log && log.dataset.tail) {
    var tail = new EventSource(log.dataset.tail);
    tail.addEventListener('log', function (e) {
      var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
      log.textContent += JSON.parse(e.data);
      if (atEnd) { log.scrollTop = log.scrollHeight; }
    });
    tail.addEventListener('end', function () { tail.close(); });
  }
})();
