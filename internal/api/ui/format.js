// The webhooks UI's words for the API's values: times in UTC with their zone, durations down to
// microseconds, success as counts, the circuit breaker as a customer reads it. No DOM here; app.js
// uses these through window.webhooksFormat.
'use strict';

(function () {
  const pad = (n) => String(n).padStart(2, '0');
  // clock is a date's time of day in UTC, "12:40:05 UTC".
  function clock(d) { return pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds()) + ' UTC'; }
  // time is an RFC 3339 string as "2026-12-03 12:40:05 UTC" ("—" for none).
  function time(s) {
    if (!s) return '—';
    const d = new Date(s);
    if (isNaN(d)) return String(s);
    return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()) + ' ' + clock(d);
  }
  // soon is a time as its clock when it is today (UTC), else in full.
  function soon(s) {
    const d = new Date(s);
    if (isNaN(d)) return time(s);
    return d.toISOString().slice(0, 10) === new Date().toISOString().slice(0, 10) ? clock(d) : time(s);
  }
  // duration is nanoseconds in the unit that reads best: "830 ns", "47 µs", "3.2 ms", "120 ms", "1.50 s".
  function duration(ns) {
    if (ns === undefined || ns === null || isNaN(ns)) return '—';
    if (ns < 1e3) return Math.round(ns) + ' ns';
    if (ns < 1e6) return Math.round(ns / 1e3) + ' µs';
    if (ns < 1e9) { const ms = ns / 1e6; return ms.toFixed(ms < 10 ? 1 : 0) + ' ms'; }
    return (ns / 1e9).toFixed(2) + ' s';
  }
  // success is the hourly stats' attempts as "5 of 7 attempts succeeded (71 %)", "0 of 7 attempts
  // succeeded", "no attempts": attempts, not deliveries (a delivery retried counts once per attempt).
  function success(hours) {
    let ok = 0, all = 0;
    for (const h of hours || []) { ok += h.success; all += h.success + h.failed; }
    if (!all) return 'no attempts';
    const pct = ok > 0 && ok < all ? ' (' + Math.min(99, Math.max(1, Math.round(100 * ok / all))) + ' %)' : '';
    return ok + ' of ' + all + (all === 1 ? ' attempt' : ' attempts') + ' succeeded' + pct;
  }
  const plural = (n, one) => n + ' ' + one + (n === 1 ? '' : 's');
  // circuit is the circuit breaker in words: { text, tone } with tone ok, warn or bad; the newest
  // counted failure, in words, follows the count: "paused after 5 failures (the endpoint answered 503
  // Service Unavailable), next try 18:17:11 UTC".
  function circuit(h) {
    const n = h.consecutive_failures || 0;
    const why = h.last_failure ? ' (' + h.last_failure + ')' : '';
    if (h.state === 'closed') {
      return n ? { text: 'delivering · ' + plural(n, 'recent failure') + why, tone: 'warn' } : { text: 'delivering', tone: 'ok' };
    }
    if (h.state === 'disabled') return { text: 'not delivering: disabled' + (n ? ' after ' + plural(n, 'failure') + why : ''), tone: 'bad' };
    const paused = 'paused after ' + plural(n, 'failure') + why;
    if (h.state === 'probing') return { text: paused + ', trying again now', tone: 'warn' };
    const at = h.open_until ? new Date(h.open_until) : null;
    if (!at || at <= new Date()) return { text: paused + ', next try any moment', tone: 'bad' };
    return { text: paused + ', next try ' + soon(h.open_until), tone: 'bad' };
  }
  // counts is an endpoint's delivery counts (GET /webhooks/{id}/counts) in words: "3 waiting for the
  // next try · 2 pending · 6 of the latest 12 queued behind their order key · 1 of the latest 12
  // deliveries failed for good" (attempts that failed and will be retried are not failures: their
  // deliveries are pending or waiting).
  function counts(c) {
    const parts = [];
    if (c.parked) parts.push(c.parked + ' waiting for the next try');
    if (c.pending - c.parked > 0) parts.push((c.pending - c.parked) + ' pending');
    if (c.waiting) parts.push(c.waiting + ' of the latest ' + c.examined + ' queued behind their order key');
    if (!c.examined) parts.push('no deliveries yet');
    else if (c.examined === 1) parts.push(c.failed ? 'the latest delivery failed for good' : 'the latest delivery has not failed');
    else parts.push((c.failed || 'none') + ' of the latest ' + c.examined + ' deliveries failed for good');
    return parts.join(' · ');
  }
  // held is what holds an endpoint's due deliveries (an entry of GET /backlog's held) in words: "the
  // endpoint is paused until 18:17:11 UTC (circuit open after 5 failures)", "the endpoint is disabled:
  // why", "the endpoint's 2 attempts in flight are its MaxConcurrency".
  function held(h) {
    if (h.why === 'disabled') return 'the endpoint is disabled' + (h.disabled_reason ? ': ' + h.disabled_reason : '');
    if (h.why === 'at_max_concurrency') return 'the endpoint\'s ' + plural(h.max_concurrency, 'attempt') + ' in flight are its MaxConcurrency';
    const after = ' (circuit open after ' + plural(h.failures || 0, 'failure') + ')';
    const at = h.open_until ? new Date(h.open_until) : null;
    if (!at || at <= new Date()) return 'the endpoint is paused, its next try any moment' + after;
    return 'the endpoint is paused until ' + soon(h.open_until) + after;
  }
  window.webhooksFormat = { time, clock, soon, duration, success, circuit, counts, held };
})();
