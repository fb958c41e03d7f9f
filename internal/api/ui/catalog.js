// The webhooks UI's pages of the catalog of event types (GET /event-types): the list of types, and
// each type with its description, its schema (its fields, then the schema itself) and its examples.
// The operator and the portal read the same catalog; only the operator's API changes it. app.js calls
// window.webhooksCatalog with its helpers and routes to the pages it returns.
'use strict';

window.webhooksCatalog = function (ui) {
  const { mode, el, api, enc, render } = ui;

  // typeOf is a schema's type in words: "string", "integer or null", "one of "a", "b"", "object".
  function typeOf(s) {
    if (!s || typeof s !== 'object') return s === false ? 'nothing' : 'anything';
    if ('const' in s) return JSON.stringify(s.const);
    if (Array.isArray(s.enum)) return 'one of ' + s.enum.map((v) => JSON.stringify(v)).join(', ');
    if (typeof s.$ref === 'string') return s.$ref.replace(/^#\/(\$defs|definitions)\//, '');
    const t = Array.isArray(s.type) ? s.type.join(' or ') : s.type;
    if (t === 'array' && s.items && typeof s.items === 'object') return 'array of ' + typeOf(s.items);
    if (t) return t + (s.format ? ' (' + s.format + ')' : '');
    for (const k of ['oneOf', 'anyOf']) if (Array.isArray(s[k])) return s[k].map(typeOf).join(' or ');
    return 'anything';
  }

  // fields is the table of an object schema's properties: name, type, required, description (null
  // when the schema names none).
  function fields(schema) {
    const props = schema && typeof schema === 'object' && schema.properties;
    if (!props || typeof props !== 'object' || !Object.keys(props).length) return null;
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    return el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'schema-fields' },
      el('thead', {}, el('tr', {}, ['Field', 'Type', 'Required', 'Description'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, Object.entries(props).map(([name, p]) => el('tr', { 'data-name': name },
        el('td', { 'data-label': 'Field' }, el('code', { text: 'data.' + name })),
        el('td', { 'data-label': 'Type' }, el('code', { text: typeOf(p) })), // JSON's names: "null" is a type
        el('td', { 'data-label': 'Required', text: required.has(name) ? 'yes' : 'no' }),
        el('td', { 'data-label': 'Description', class: 'muted', text: (p && p.description) || '—' }))))));
  }

  async function eventTypesPage() {
    const { event_types: types } = await api('GET', '/event-types');
    const list = types || [];
    const rows = list.map((t) => el('tr', { 'data-name': t.name },
      el('td', { 'data-label': 'Event type' }, el('a', { href: '#/event-types/' + enc(t.name) }, el('code', { text: t.name })),
        t.deprecated ? [' ', el('span', { class: 'status s-pending', text: 'deprecated' })] : null),
      el('td', { 'data-label': 'Description', text: t.description || '—' })));
    render('Event types',
      el('p', { class: 'muted', text: 'The events this service sends, and what the data of each holds. ' +
        'An endpoint subscribes to them by name, or to a prefix such as order.*.' }),
      list.length === 0 ? el('p', { class: 'empty', id: 'no-event-types', text: 'The catalog holds no event type yet' +
        (mode === 'operator' ? ': add them with EventTypes().Create or POST /event-types.' : '.') }) :
        el('div', { class: 'table-wrap' }, el('table', { class: 'list', id: 'event-types' },
          el('thead', {}, el('tr', {}, ['Event type', 'Description'].map((h) => el('th', { scope: 'col', text: h })))),
          el('tbody', {}, rows))));
  }

  async function eventTypePage(name) {
    const t = await api('GET', '/event-types/' + enc(name));
    const examples = t.examples || [];
    render(t.name,
      el('p', { class: 'crumbs' }, el('a', { href: '#/event-types' }, '← Event types')),
      el('section', { class: 'card' },
        el('p', { id: 'event-type-description', text: t.description || 'No description.' }),
        t.deprecated ? el('p', { class: 'flash error', id: 'event-type-deprecated',
          text: 'Deprecated: producers should stop sending it. Its events are still delivered.' }) : null,
        el('p', { class: 'muted', text: 'Each event is sent as {"id", "type": "' + t.name + '", "timestamp", "data"}, signed per Standard Webhooks; ' +
          'the schema below is that of its data.' })),
      el('section', { class: 'card' }, el('h2', { text: 'Schema of its data' }),
        t.schema === undefined ? el('p', { class: 'muted', id: 'schema', text: 'None: its data may be any JSON value.' }) : [
          fields(t.schema),
          el('pre', { class: 'payload', id: 'schema', text: JSON.stringify(t.schema, null, 2) })]),
      el('section', { class: 'card' }, el('h2', { text: 'Examples of its data' }),
        examples.length === 0 ? el('p', { class: 'muted', id: 'no-examples', text: 'No example.' }) :
          examples.map((ex, i) => el('figure', { class: 'example' },
            el('figcaption', { class: 'muted', text: 'Example ' + (i + 1) }),
            el('pre', { class: 'payload', text: JSON.stringify(ex, null, 2) })))));
  }

  return { eventTypesPage, eventTypePage };
};
