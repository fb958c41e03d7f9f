// The webhooks UI's words for the API's values: times in UTC with their zone (shown and read),
// durations down to microseconds, success as counts, the circuit breaker as a customer reads it, an
// endpoint's kind of destination and each attempt's outcome. No DOM here; app.js
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
  // Deliveries the endpoint's transformation skipped (not attempted) are added: "…; 3 skipped by the
  // transformation".
  function success(hours) {
    let ok = 0, all = 0, skipped = 0;
    for (const h of hours || []) { ok += h.success; all += h.success + h.failed; skipped += h.skipped || 0; }
    const skips = skipped ? '; ' + skipped + ' skipped by the transformation' : '';
    if (!all) return 'no attempts' + skips;
    const pct = ok > 0 && ok < all ? ' (' + Math.min(99, Math.max(1, Math.round(100 * ok / all))) + ' %)' : '';
    return ok + ' of ' + all + (all === 1 ? ' attempt' : ' attempts') + ' succeeded' + pct + skips;
  }
  const plural = (n, one) => n + ' ' + one + (n === 1 ? '' : 's');
  // circuit is an endpoint's delivery state in words, from its circuit breaker h (GET
  // /webhooks/{id}/health) and its counts c (GET /webhooks/{id}/counts: whether deliveries wait for
  // its next try): { text, tone } with tone ok, warn or bad. One vocabulary on every page: an endpoint
  // is delivering, paused (after failures; its next try is one delivery sent to test it) or disabled
  // (its reason is the endpoint's own, shown beside it). "paused after 5 failures (the endpoint
  // answered 503 Service Unavailable), next try 18:17:11 UTC"; a next try is named only when a
  // delivery waits for it.
  function circuit(h, c) {
    const n = h.consecutive_failures || 0;
    const why = h.last_failure ? ' (' + h.last_failure + ')' : '';
    if (h.state === 'closed') {
      return n ? { text: 'delivering · ' + plural(n, 'recent failure') + why, tone: 'warn' } : { text: 'delivering', tone: 'ok' };
    }
    if (h.state === 'disabled') return { text: 'not delivering: the endpoint is disabled', tone: 'bad' };
    const paused = 'paused after ' + plural(n, 'failure') + why;
    if (h.state === 'probing') return { text: paused + ', trying again now', tone: 'warn' };
    const waiting = !!(c && c.parked > 0);
    const at = h.open_until ? new Date(h.open_until) : null;
    if (at && at > new Date()) {
      return { text: paused + (waiting ? ', next try ' + soon(h.open_until) : ' until ' + soon(h.open_until) + '; no delivery waits for its next try'), tone: 'bad' };
    }
    return { text: paused + (waiting ? ', next try any moment' : '; its pause is over, and no delivery waits: the next one due tries it'), tone: 'bad' };
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
  // held is what holds an endpoint's due deliveries (an entry of GET /backlog's held) in words, in the
  // vocabulary of circuit: "the endpoint is paused after 5 failures, next try 18:17:11 UTC", "the
  // endpoint is disabled: why", "the endpoint's 2 attempts in flight are its MaxConcurrency".
  function held(h) {
    if (h.why === 'disabled') return 'the endpoint is disabled' + (h.disabled_reason ? ': ' + h.disabled_reason : '');
    if (h.why === 'at_max_concurrency') return 'the endpoint\'s ' + plural(h.max_concurrency, 'attempt') + ' in flight are its MaxConcurrency';
    const paused = 'the endpoint is paused after ' + plural(h.failures || 0, 'failure');
    const at = h.open_until ? new Date(h.open_until) : null;
    if (!at || at <= new Date()) return paused + ', next try any moment';
    return paused + ', next try ' + soon(h.open_until);
  }
  // destination is the kind of destination a webhook's URL picks by its scheme: { name: "HTTP",
  // "RabbitMQ", "NATS", "Kafka" or the scheme itself, broker: false only for HTTP }.
  function destination(url) {
    const scheme = ((/^([a-z][a-z0-9+.-]*):/i.exec(url || '') || [])[1] || '').toLowerCase();
    const name = { http: 'HTTP', https: 'HTTP', amqp: 'RabbitMQ', amqps: 'RabbitMQ', nats: 'NATS', kafka: 'Kafka' }[scheme] || scheme || 'unknown';
    return { name, broker: scheme !== 'http' && scheme !== 'https' };
  }
  // attempt is one attempt (an entry of a delivery's history) in words: { text, ok }. An HTTP attempt
  // that was answered reads "HTTP 503"; a broker's has no status: "taken by the broker (stream ORDERS,
  // sequence 42)"; a failure without an answer reads as its destination wrote it.
  function attempt(a, broker) {
    const ok = a.status_code ? a.status_code < 300 && !a.error : !a.error;
    if (!broker && a.status_code) return { text: 'HTTP ' + a.status_code, ok };
    if (ok) return { text: broker ? 'taken by the broker' + (a.response ? ' (' + a.response + ')' : '') : 'delivered', ok };
    return { text: a.error || 'failed', ok };
  }
  // Every time the UI shows or reads is UTC, written the same way, 24-hour: "2026-12-03 12:40:05 UTC"
  // shown; "2026-12-03 12:40" in a field. utcField is a date as a field's value ("" for none);
  // parseUTCField reads one (seconds, a "T", a trailing "UTC" or "Z" allowed), null when it is not a
  // time; rfc3339 is a date as the API reads it.
  function utcField(d) { return d && !isNaN(d) ? d.toISOString().slice(0, 16).replace('T', ' ') : ''; }
  function parseUTCField(s) {
    const m = /^\s*(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d)(?::(\d\d))?\s*(?:UTC|Z)?\s*$/i.exec(s || '');
    if (!m) return null;
    const [y, mo, da, h, mi, se] = m.slice(1).map((v) => Number(v || 0));
    const d = new Date(Date.UTC(y, mo - 1, da, h, mi, se));
    return d.getUTCMonth() === mo - 1 && d.getUTCDate() === da && h < 24 && mi < 60 && se < 60 ? d : null;
  }
  function rfc3339(d) { return d.toISOString().replace(/\.\d+Z$/, 'Z'); }
  // plain is an API error message as a sentence, without the library's prefixes (each "webhooks: ",
  // and the kind of error a sentinel names, wherever they repeat): 'webhooks: invalid webhook: url
  // "x" is not …' reads 'URL "x" is not …'.
  function plain(message) {
    let m = String(message);
    for (let i = 0; i < 8; i++) {
      const next = m.replace(/^\s*(webhooks: |invalid webhook(: |$)|invalid request(: |$)|egress(: |$)|not found(: |$)|url host: |no probe now: |the delivery cannot be retried now: )/i, '');
      if (next === m) break;
      m = next;
    }
    m = m.replace(/: webhooks: /g, ': ').replace(/^url\b/i, 'URL');
    return m ? m.charAt(0).toUpperCase() + m.slice(1) + (/[.!?]$/.test(m) ? '' : '.') : 'The server refused this value.';
  }
  window.webhooksFormat = { time, clock, soon, duration, success, circuit, counts, held, destination, attempt, utcField, parseUTCField, rfc3339, plain };
})();
