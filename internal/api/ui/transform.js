// The webhooks UI's transformation field (Webhook.Transform, a CEL expression) on the endpoint form,
// with its Preview: POST /transform/preview runs the expression on the catalog's first example of a
// type, or on a sample event the user edits, and the field shows the result (pretty JSON), a skip, or
// the error in words with its line and column. The operator and the portal share it; in the portal the
// API runs the preview on the tenant's own event. app.js calls window.webhooksTransform with its
// helpers and puts the field on its form.
'use strict';

window.webhooksTransform = function (ui) {
  const { el, api, button, plain, explain, APIError, Stale } = ui;

  // words is an API error about a transformation as a sentence: its prefixes gone and each "at 1:9"
  // written "line 1, column 9".
  function words(message) {
    let m = plain(message).replace(/^(transform: )?(invalid transformation: )?/i, '');
    m = m.replace(/\bat (\d+):(\d+): /g, (_, line, col) => 'line ' + line + ', column ' + col + ': ');
    return m.charAt(0).toUpperCase() + m.slice(1);
  }
  // marker is the expression's line an error names, with a caret under its column (null when the
  // message names none, or a place outside the expression).
  function marker(message, expr) {
    const at = /\bat (\d+):(\d+): /.exec(message);
    if (!at) return null;
    const line = expr.split('\n')[Number(at[1]) - 1];
    const col = Number(at[2]);
    if (line === undefined || col < 1 || col > line.length + 1) return null;
    return el('pre', { class: 'transform-marker', 'aria-hidden': 'true', text: line + '\n' + ' '.repeat(col - 1) + '^' });
  }
  // errorNodes says what is wrong with an expression: in words, then where.
  function errorNodes(message, expr, id) {
    return [el('p', { class: 'field-error', id, text: words(message) }), marker(message, expr)];
  }

  // field is the form's Transformation field for webhook w and its Preview; events is the form's
  // Event types input (its first exact type is the sample's type) and catalog the promise of the
  // catalog's types. It returns the node, the input, and error(message), which shows the API's refusal
  // of a save beside the field.
  function field(w, events, catalog) {
    const input = el('textarea', { id: 'f-transform', name: 'transform', rows: 4, spellcheck: 'false', autocomplete: 'off',
      placeholder: '{"text": "Invoice " + event.data.id + " paid"}' });
    input.value = w.transform || '';
    const box = el('div', { class: 'field' }, el('label', { for: 'f-transform', text: 'Expression (CEL, optional)' }), input,
      el('small', { class: 'muted', text: 'Reshapes what this endpoint receives from event (event.type, event.data…): a map or a list becomes ' +
        'the data sent, body(…) the whole body, and null skips the event. Empty: each event is sent as it is.' }));

    const byName = new Map();
    const list = el('datalist', { id: 'sample-types' });
    const first = () => events.value.split(/[\s,]+/).find((p) => p && !p.includes('*')) || '';
    const type = el('input', { id: 'f-sample-type', name: 'sample_type', list: 'sample-types', value: first() || 'test.event', autocomplete: 'off' });
    const data = el('textarea', { id: 'f-sample-data', name: 'sample_data', rows: 5, spellcheck: 'false' });
    data.value = '{}';
    const source = el('small', { class: 'muted', id: 'sample-source', text: 'Your own sample: write the event\'s data as JSON.' });
    const example = (name) => { const t = byName.get(name); return t && t.examples && t.examples.length ? t.examples[0] : undefined; };
    // fill puts the type's first catalog example in the sample (when it has one).
    const fill = () => {
      const ex = example(type.value.trim());
      if (ex === undefined) { source.textContent = 'Your own sample: write the event\'s data as JSON.'; return; }
      data.value = JSON.stringify(ex, null, 2);
      source.textContent = 'The catalog\'s example of ' + type.value.trim() + '; edit it to try another event.';
    };
    type.addEventListener('change', fill);
    data.addEventListener('input', () => {
      if (example(type.value.trim()) !== undefined) source.textContent = 'Your own sample, edited from the catalog\'s example of ' + type.value.trim() + '.';
    });
    catalog.then((types) => {
      for (const t of types) {
        byName.set(t.name, t);
        list.append(el('option', { value: t.name }));
      }
      if (!example(type.value.trim())) {
        const withExample = types.find((t) => t.examples && t.examples.length);
        if (withExample && !first()) type.value = withExample.name;
      }
      if (data.value === '{}') fill();
    }).catch(() => {});

    const result = el('div', { id: 'preview-result', role: 'status', 'aria-live': 'polite' });
    const preview = button('Preview', async () => {
      const expr = input.value.trim();
      if (!expr) { result.replaceChildren(el('p', { class: 'muted', text: 'Write an expression first: without one, each event is sent as it is.' })); return; }
      let sample;
      try { sample = JSON.parse(data.value); } catch (e) {
        result.replaceChildren(el('p', { class: 'field-error', id: 'preview-error', text: 'The sample data is not valid JSON: ' + e.message + '.' }));
        return;
      }
      const name = type.value.trim() || 'test.event';
      const ex = example(name);
      // The catalog's example as it is: the API reads it from the catalog; else the sample itself.
      const body = ex !== undefined && JSON.stringify(ex) === JSON.stringify(sample) ? { transform: expr, event_type: name }
        : { transform: expr, event: { type: name, data: sample } };
      preview.disabled = true;
      try {
        const r = await api('POST', '/transform/preview', body);
        result.replaceChildren(...(r.skipped
          ? [el('p', { id: 'preview-skipped', text: 'Skipped: the expression gives null for this event, so this endpoint would get nothing (the delivery is recorded as skipped).' })]
          : [el('p', { class: 'muted', text: 'This endpoint would receive this as the event\'s data (as the whole body, for body(…)):' }),
            el('pre', { class: 'payload', id: 'preview-json', text: JSON.stringify(r.data, null, 2) })]));
      } catch (e) {
        if (e instanceof Stale) return;
        result.replaceChildren(...(e instanceof APIError && e.status === 400 ? errorNodes(e.message, expr, 'preview-error')
          : [el('p', { class: 'field-error', id: 'preview-error', text: explain(e) })]).filter(Boolean));
      } finally { preview.disabled = false; }
    }, { id: 'preview' });
    // Enter in the sample's type previews (it would otherwise save the endpoint).
    type.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); fill(); preview.click(); } });

    const node = el('fieldset', { class: 'transform' }, el('legend', { text: 'Transformation' }), box,
      el('div', { class: 'preview' },
        el('div', { class: 'field' }, el('label', { for: 'f-sample-type', text: 'Sample event type' }), type, list),
        el('div', { class: 'field' }, el('label', { for: 'f-sample-data', text: 'Sample event data (JSON)' }), data, source),
        el('div', { class: 'actions' }, preview), result));
    // error shows the API's refusal of the expression beside the field, and where it is.
    const error = (message) => {
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', 'err-f-transform');
      box.append(...errorNodes(message, input.value, 'err-f-transform').filter(Boolean));
      input.focus();
    };
    return { node, input, error };
  }

  return { field, words };
};
