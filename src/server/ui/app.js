// The query page: plain browser JavaScript, no build step, no dependency. Everything it knows about
// the query (selectors, fields, item requests, filters, relation flags, block members) it reads
// from /openapi.json, which the server generates from its own declarations.

const $ = (id) => document.getElementById(id)

const MAX_ROWS = 2000
const MAX_RAW_LINES = 300
const MAX_RAW_CHARS = 2000
/** characters of response lines kept to open records from (the oldest are let go first) */
const MAX_KEPT_CHARS = 32 * 1024 * 1024
const MAX_EVENTS = 50
const SHOWN_HEADERS = [
  'X-Sqd-Head-Number',
  'X-Sqd-Finalized-Head-Number',
  'X-Sqd-Finalized-Head-Hash',
  'Content-Type',
  'Content-Encoding',
  'Retry-After',
  'X-Request-Id',
]

const state = {
  /** the OpenAPI document */
  doc: null,
  /** dataset metadata by name */
  datasets: new Map(),
  /** the text of the last example written into the editor (replaced on a dataset change if untouched) */
  example: null,
  /** the running request's AbortController */
  ctl: null,
  /** block number -> hash of the blocks shown (fork handling) */
  seen: new Map(),
  /** block number -> table row */
  rows: new Map(),
  requests: 0,
  blocks: 0,
  /** the running request follows the head */
  tailing: false,
  /** block members of the output (transactions, instructions, ...) from the Block schema */
  members: [],
  totals: {},
  /** the lines kept to open (line number in this run -> text), oldest first, and their size */
  kept: new Map(),
  keptChars: 0,
  lineSeq: 0,
  /** the query and last block of a response the server ended before the range did (Continue) */
  resume: null,
}

// --- helpers -------------------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'dataset') Object.assign(e.dataset, v)
    else if (k in e && typeof v !== 'string') e[k] = v
    else e.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children) e.append(c)
  return e
}

async function getJson(url) {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  return res.json()
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true })
  })
}

const types = (schema) => (Array.isArray(schema?.type) ? schema.type : [schema?.type])

function shortHash(h) {
  return typeof h === 'string' && h.length > 16 ? `${h.slice(0, 8)}…${h.slice(-4)}` : String(h ?? '')
}

/** what a filter value must be, in words (the schema's description of its items) */
function valueDescription(items) {
  return typeof items?.description === 'string' ? items.description : null
}

function querySchema() {
  return state.doc.components.schemas.Query
}

// --- the editor ----------------------------------------------------------------------------------

function readQuery() {
  const text = $('query').value
  let q
  try {
    q = JSON.parse(text)
  } catch (e) {
    throw new Error(`the query is not valid JSON: ${e.message}`)
  }
  if (typeof q !== 'object' || q === null || Array.isArray(q)) throw new Error('the query must be a JSON object')
  return q
}

function showQueryError(msg) {
  $('query-error').textContent = msg ?? ''
}

function writeQuery(q) {
  $('query').value = JSON.stringify(q, null, 2)
  showQueryError(null)
  syncPicker(q)
}

function exampleQuery(meta, head) {
  const live = meta.real_time
  const fromBlock = live && head ? Math.max(meta.start_block, head.number - 10) : meta.start_block
  // the dataset's example from the query schema (its type, fields and item requests), on this range
  const schema = state.doc.components.schemas.Query
  const example = schema.examples?.[0] ?? { type: schema.properties.type.const }
  const q = { type: example.type, fromBlock }
  // a bounded range over what a static dataset holds (a response ends after its time or byte budget)
  if (!live) q.toBlock = Math.max(fromBlock, head?.number ?? fromBlock)
  for (const [k, v] of Object.entries(example)) if (!(k in q) && k !== 'fromBlock') q[k] = v
  return q
}

async function showExample() {
  const meta = state.datasets.get($('dataset').value)
  if (!meta) return
  const head = await getJson(`/datasets/${encodeURIComponent(meta.dataset)}/head`).catch(() => null)
  writeQuery(exampleQuery(meta, head))
  state.example = $('query').value
}

// --- the field picker (from the schema of `fields`) ----------------------------------------------

function buildPicker() {
  const box = $('fields')
  box.replaceChildren()
  const selectors = querySchema().properties.fields.properties
  for (const [sel, schema] of Object.entries(selectors)) {
    const set = el('fieldset', { dataset: { selector: sel } }, el('legend', {}, sel))
    for (const [name, fs] of Object.entries(schema.properties)) {
      const input = el('input', { type: 'checkbox', dataset: { selector: sel, field: name } })
      input.addEventListener('change', () => toggleField(input))
      set.append(el('label', { title: fs.description ?? '' }, input, name))
    }
    box.append(set)
  }
}

function toggleField(input) {
  const { selector, field } = input.dataset
  let q
  try {
    q = readQuery()
  } catch (e) {
    input.checked = !input.checked
    return showQueryError(e.message)
  }
  const fields = (q.fields ??= {})
  const sel = (fields[selector] ??= {})
  if (input.checked) sel[field] = true
  else delete sel[field]
  if (Object.keys(sel).length === 0) delete fields[selector]
  if (Object.keys(fields).length === 0) delete q.fields
  writeQuery(q)
}

function syncPicker(q) {
  for (const input of $('fields').querySelectorAll('input[type=checkbox]')) {
    const { selector, field } = input.dataset
    input.checked = q?.fields?.[selector]?.[field] === true
  }
}

// --- the item request builder (from the schemas of the request lists) ----------------------------

function requestLists() {
  return Object.entries(querySchema().properties).filter(
    ([, s]) => types(s).includes('array') && types(s.items).includes('object'),
  )
}

function buildRequestBuilder() {
  const select = $('request-list')
  select.replaceChildren(...requestLists().map(([member]) => el('option', { value: member }, member)))
  select.addEventListener('change', buildRequestForm)
  $('request-add').addEventListener('click', addRequest)
  buildRequestForm()
}

function buildRequestForm() {
  const member = $('request-list').value
  const item = querySchema().properties[member].items
  const filters = el('div', { class: 'filters' })
  const relations = el('div', { class: 'relations' })
  for (const [name, s] of Object.entries(item.properties)) {
    const t = types(s)
    const title = s.description ?? ''
    if (t.includes('array') && s.items?.enum) {
      const opts = s.items.enum.map((v) =>
        el('label', {}, el('input', { type: 'checkbox', value: v, dataset: { filter: name, enum: '1' } }), v),
      )
      filters.append(el('div', { class: 'filter', title }, el('span', {}, name), ...opts))
    } else if (t.includes('array')) {
      const placeholder = `${valueDescription(s.items) ?? 'values'}, separated by spaces or commas`
      filters.append(
        el(
          'label',
          { class: 'filter', title },
          el('span', {}, name),
          el('input', { type: 'text', placeholder, dataset: { filter: name } }),
        ),
      )
    } else if (t.includes('boolean') && t.includes('null')) {
      const select = el(
        'select',
        { dataset: { filter: name, tri: '1' } },
        el('option', { value: '' }, '—'),
        el('option', { value: 'true' }, 'true'),
        el('option', { value: 'false' }, 'false'),
      )
      filters.append(el('label', { class: 'filter', title }, el('span', {}, name), select))
    } else if (t.includes('boolean')) {
      relations.append(el('label', { title }, el('input', { type: 'checkbox', dataset: { relation: name } }), name))
    }
  }
  $('request-form').replaceChildren(
    el('div', { class: 'muted' }, item.description ?? ''),
    filters,
    el('div', { class: 'muted' }, 'relations'),
    relations,
  )
}

function addRequest() {
  const member = $('request-list').value
  const schema = querySchema().properties[member].items.properties
  const item = {}
  const problems = []
  const form = $('request-form')
  for (const input of form.querySelectorAll('[data-filter]')) {
    const name = input.dataset.filter
    if (input.dataset.enum) {
      if (input.checked) (item[name] ??= []).push(input.value)
    } else if (input.dataset.tri) {
      if (input.value) item[name] = input.value === 'true'
    } else {
      const values = input.value.split(/[\s,]+/).filter((v) => v.length > 0)
      if (!values.length) continue
      const items = schema[name].items
      const bad = items?.pattern ? values.filter((v) => !new RegExp(items.pattern).test(v)) : []
      if (bad.length) {
        const what = valueDescription(items) ?? 'a valid value'
        problems.push(`${name}: ${bad.join(', ')} ${bad.length > 1 ? 'are not each' : 'is not'} ${what}`)
      }
      item[name] = values
    }
  }
  for (const input of form.querySelectorAll('[data-relation]')) if (input.checked) item[input.dataset.relation] = true
  if (problems.length) return showQueryError(problems.join('; '))
  let q
  try {
    q = readQuery()
  } catch (e) {
    return showQueryError(e.message)
  }
  q[member] = [...(Array.isArray(q[member]) ? q[member] : []), item]
  writeQuery(q)
}

// --- datasets --------------------------------------------------------------------------------------

async function refreshInfo() {
  const meta = state.datasets.get($('dataset').value)
  if (!meta) return
  const base = `/datasets/${encodeURIComponent(meta.dataset)}`
  const [head, fin] = await Promise.all([
    getJson(`${base}/head`).catch(() => null),
    getJson(`${base}/finalized-head`).catch(() => null),
  ])
  $('dataset-info').textContent =
    `start ${meta.start_block} · head ${head?.number ?? '–'} · finalized ${fin?.number ?? '–'}` +
    (meta.real_time ? ' · real time' : '') +
    (meta.aliases.length ? ` · aliases ${meta.aliases.join(', ')}` : '')
}

async function onDatasetChange() {
  const untouched = state.example === null || $('query').value === state.example || !$('query').value.trim()
  await refreshInfo()
  if (untouched) await showExample()
}

// --- results -------------------------------------------------------------------------------------

function setState(text, kind = text) {
  $('state').textContent = text
  $('state').dataset.state = kind
}

function event(text) {
  const li = el('li', {}, text)
  const list = $('events')
  list.append(li)
  while (list.children.length > MAX_EVENTS) list.firstElementChild.remove()
  return li
}

function resetResults() {
  state.seen.clear()
  state.rows.clear()
  state.requests = 0
  state.blocks = 0
  state.members = Object.keys(state.doc.components.schemas.Block.properties).filter((m) => m !== 'header')
  state.totals = Object.fromEntries(state.members.map((m) => [m, 0]))
  state.kept.clear()
  state.keptChars = 0
  state.lineSeq = 0
  state.resume = null
  $('continue').hidden = true
  closeRecord()
  $('blocks').tHead.replaceChildren(
    el(
      'tr',
      {},
      ...['block', 'hash', 'time', 'bytes'].map((h) => el('th', {}, h)),
      ...state.members.map((m) => el('th', { title: m }, MEMBER_LABELS[m] ?? m)),
    ),
  )
  $('blocks').tBodies[0].replaceChildren()
  $('blocks').tFoot.replaceChildren()
  $('raw').replaceChildren()
  $('events').replaceChildren()
  $('headers').tBodies[0].replaceChildren()
  $('response-body').hidden = true
  $('status-code').textContent = '–'
  $('status-text').textContent = ''
  $('requests').textContent = '0'
  $('block-count').textContent = '0'
  $('timing').textContent = '–'
}

function showResponse(res) {
  $('status-code').textContent = String(res.status)
  $('status-code').className = res.ok ? 'ok' : 'bad'
  $('status-text').textContent = res.statusText
  const rows = []
  for (const name of SHOWN_HEADERS) {
    const v = res.headers.get(name)
    if (v !== null) rows.push(el('tr', {}, el('th', {}, name), el('td', { dataset: { header: name } }, v)))
  }
  $('headers').tBodies[0].replaceChildren(...rows)
}

function showBody(text) {
  const pre = $('response-body')
  pre.hidden = !text
  pre.textContent = text
}

/** short column headings (the full name is the heading's title) */
const MEMBER_LABELS = {
  transactions: 'txs',
  instructions: 'instr.',
  logs: 'logs',
  balances: 'bal.',
  tokenBalances: 'token bal.',
  rewards: 'rewards',
}

function updateTotals() {
  const cells = [el('th', {}, 'total'), el('td'), el('td'), el('td')]
  for (const m of state.members) cells.push(el('td', { dataset: { member: m } }, String(state.totals[m])))
  $('blocks').tFoot.replaceChildren(el('tr', {}, ...cells))
  $('block-count').textContent = String($('blocks').tBodies[0].rows.length)
}

function addBlock(line, bytes) {
  const b = JSON.parse(line)
  const h = b.header ?? {}
  const number = typeof h.number === 'number' ? h.number : null
  const counts = state.members.map((m) => (Array.isArray(b[m]) ? b[m].length : 0))
  state.members.forEach((m, i) => (state.totals[m] += counts[i]))
  const time = typeof h.timestamp === 'number' ? new Date(h.timestamp * 1000).toISOString().slice(0, 19) + 'Z' : ''
  const seq = keep(line)
  const row = el(
    'tr',
    { dataset: { number: number ?? '', seq }, tabindex: 0, title: 'open this block' },
    el('td', {}, number === null ? '?' : String(number)),
    el('td', { title: h.hash ?? '' }, shortHash(h.hash)),
    el('td', {}, time),
    el('td', {}, formatBytes(bytes)),
    ...counts.map((c, i) => el('td', { class: c ? '' : 'zero', dataset: { member: state.members[i] } }, String(c))),
  )
  const tbody = $('blocks').tBodies[0]
  // while tailing, keep following the newest rows as long as the view is at the bottom
  const box = $('blocks').parentElement
  const follow = state.tailing && box.scrollTop + box.clientHeight >= box.scrollHeight - 40
  tbody.append(row)
  if (follow) box.scrollTop = box.scrollHeight
  state.blocks++
  if (number !== null) {
    state.rows.get(number)?.remove()
    state.rows.set(number, row)
    if (typeof h.hash === 'string') state.seen.set(number, h.hash)
  }
  while (tbody.rows.length > MAX_ROWS) dropRow(tbody.rows[0])
  const raw = $('raw')
  const cut = line.length > MAX_RAW_CHARS
  raw.append(
    el(
      'div',
      { dataset: { seq } },
      cut ? `${line.slice(0, MAX_RAW_CHARS)}… ` : line,
      ...(cut
        ? [
            el(
              'button',
              { type: 'button', class: 'link', dataset: { open: seq } },
              `open all ${line.length} characters`,
            ),
          ]
        : []),
    ),
  )
  while (raw.children.length > MAX_RAW_LINES) raw.firstElementChild.remove()
  return number === null ? null : { number, hash: h.hash }
}

function formatBytes(n) {
  return n < 10_000 ? String(n) : n < 10_000_000 ? `${(n / 1024).toFixed(0)} KiB` : `${(n / 1048576).toFixed(1)} MiB`
}

/** keeps a line to open it later (bounded: the oldest lines are let go first); returns its number */
function keep(line) {
  const seq = ++state.lineSeq
  state.kept.set(seq, line)
  state.keptChars += line.length
  for (const [k, v] of state.kept) {
    if (state.keptChars <= MAX_KEPT_CHARS || k === seq) break
    state.kept.delete(k)
    state.keptChars -= v.length
  }
  return seq
}

/** shows a response line as indented JSON in the record pane */
function openRecord(seq) {
  const line = state.kept.get(Number(seq))
  const pane = $('record')
  pane.hidden = false
  if (line === undefined) {
    $('record-title').textContent = 'record not kept'
    $('record-body').textContent =
      `The page keeps the latest ${MAX_KEPT_CHARS / 1048576} MiB of lines; run the query again to open this one.`
    return
  }
  const b = JSON.parse(line)
  $('record-title').textContent = `block ${b.header?.number ?? '?'} · ${line.length} characters`
  $('record-body').textContent = JSON.stringify(b, null, 2)
  pane.scrollIntoView({ block: 'nearest' })
}

function closeRecord() {
  $('record').hidden = true
  $('record-body').textContent = ''
}

function dropRow(row) {
  const key = row.dataset.number === '' ? null : Number(row.dataset.number)
  row.remove()
  if (key !== null) {
    state.rows.delete(key)
    state.seen.delete(key)
  }
}

/** A fork: forget the blocks above the common ancestor. */
function rollback(number) {
  for (const row of [...$('blocks').tBodies[0].rows]) {
    if (row.dataset.number !== '' && Number(row.dataset.number) > number) dropRow(row)
  }
  updateTotals()
}

/** The highest block of the current chain (409 previousBlocks, ascending) that this page has shown. */
function ancestor(previousBlocks) {
  for (let i = previousBlocks.length - 1; i >= 0; i--) {
    const b = previousBlocks[i]
    if (state.seen.get(b.number) === b.hash) return b
  }
  return previousBlocks[0] ?? null
}

// --- running -------------------------------------------------------------------------------------

async function runOnce(q, signal) {
  const dataset = $('dataset').value
  const endpoint = $('endpoint').value
  const n = ++state.requests
  $('requests').textContent = String(n)
  const ev = event(`#${n} ${endpoint} fromBlock ${q.fromBlock} …`)
  const t0 = performance.now()
  const res = await fetch(`/datasets/${encodeURIComponent(dataset)}/${endpoint}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(q),
    signal,
  })
  const tHeaders = performance.now() - t0
  showResponse(res)
  let last = null
  let count = 0
  let bytes = 0
  let conflict = null
  const timing = () =>
    `headers ${tHeaders.toFixed(0)} ms · ${(performance.now() - t0).toFixed(0)} ms · ${(bytes / 1024).toFixed(1)} KiB`
  if (res.status === 200 && res.body) {
    showBody('')
    const reader = res.body.getReader()
    const decoder = new TextDecoder()
    let buf = ''
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buf += decoder.decode(value, { stream: true })
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 1)
        if (!line) continue
        bytes += line.length + 1
        last = addBlock(line, line.length + 1) ?? last
        count++
      }
      updateTotals()
      $('timing').textContent = timing()
    }
    buf += decoder.decode()
    if (buf.trim()) throw new Error('the response ended inside a line')
  } else {
    const text = await res.text()
    bytes = text.length
    showBody(text)
    if (res.status === 409) conflict = JSON.parse(text)
  }
  $('timing').textContent = timing()
  updateTotals()
  ev.textContent = `#${n} ${endpoint} fromBlock ${q.fromBlock} → ${res.status}, ${count} blocks, ${(performance.now() - t0).toFixed(0)} ms`
  ev.dataset.status = String(res.status)
  const headHeader = endpoint === 'finalized-stream' ? 'X-Sqd-Finalized-Head-Number' : 'X-Sqd-Head-Number'
  const head = res.headers.get(headHeader)
  return {
    status: res.status,
    last,
    conflict,
    head: head === null ? null : Number(head),
    retryAfter: Number(res.headers.get('Retry-After') ?? 1) || 1,
  }
}

function setRunning(running) {
  $('run').disabled = running
  $('stop').disabled = !running
}

/**
 * Where a 200 that was not followed ended, against where the range ends: the server ends a
 * response after its time or size budget (always on a whole block), and the client resumes.
 */
function partialEnd(q, r) {
  if (r.status !== 200 || !r.last) return null
  const end = q.toBlock != null ? (r.head === null ? q.toBlock : Math.min(q.toBlock, r.head)) : r.head
  return end !== null && r.last.number < end ? { last: r.last, end } : null
}

async function run(resumeFrom = null) {
  let q
  if (resumeFrom) q = resumeFrom
  else
    try {
      q = readQuery()
    } catch (e) {
      return showQueryError(e.message)
    }
  showQueryError(null)
  state.ctl?.abort()
  const ctl = new AbortController()
  state.ctl = ctl
  const tail = $('tail').checked
  state.tailing = tail
  if (tail) {
    // resuming needs the number and hash of the last block
    q.fields = { ...q.fields, block: { ...q.fields?.block, number: true, hash: true } }
  }
  if (!resumeFrom) resetResults()
  state.resume = null
  $('continue').hidden = true
  setRunning(true)
  setState(tail ? 'tailing' : 'running')
  let final = null
  try {
    for (;;) {
      const r = await runOnce(q, ctl.signal)
      final = r
      if (ctl.signal.aborted) break
      if (!tail) {
        const cut = partialEnd(q, r)
        if (cut) state.resume = { ...q, fromBlock: cut.last.number + 1, parentBlockHash: cut.last.hash }
        break
      }
      if (r.status === 200) {
        if (r.last) {
          if (q.toBlock != null && r.last.number >= q.toBlock) break
          q = { ...q, fromBlock: r.last.number + 1, parentBlockHash: r.last.hash }
        } else if (q.toBlock != null) break
        else await sleep(1000, ctl.signal)
      } else if (r.status === 204) {
        // the server already waited for the block; ask again
        await sleep(100, ctl.signal)
      } else if (r.status === 409) {
        const base = ancestor(r.conflict?.previousBlocks ?? [])
        if (!base) break
        rollback(base.number)
        event(`fork: resuming after block ${base.number}`)
        q = { ...q, fromBlock: base.number + 1, parentBlockHash: base.hash }
      } else if (r.status === 429 || r.status === 503) {
        await sleep(1000 * r.retryAfter, ctl.signal)
      } else break
    }
    if (ctl.signal.aborted) setState('stopped')
    else if (state.resume) {
      setState(
        `partial: the server ended this response at block ${state.resume.fromBlock - 1}; Continue resumes`,
        'partial',
      )
      $('continue').hidden = false
    } else if (final && final.status >= 400) setState(`error ${final.status}`, 'error')
    else setState('done')
  } catch (e) {
    if (ctl.signal.aborted) setState('stopped')
    else {
      setState('error')
      showBody(String(e?.message ?? e))
    }
  } finally {
    if (state.ctl === ctl) {
      state.ctl = null
      setRunning(false)
    }
  }
}

function resume() {
  if (state.resume) run(state.resume)
}

function stop() {
  state.ctl?.abort()
}

// --- start ---------------------------------------------------------------------------------------

async function init() {
  const [doc, datasets] = await Promise.all([getJson('/openapi.json'), getJson('/datasets')])
  state.doc = doc
  for (const d of datasets) state.datasets.set(d.dataset, d)
  $('dataset').replaceChildren(...datasets.map((d) => el('option', { value: d.dataset }, d.dataset)))
  buildPicker()
  buildRequestBuilder()
  resetResults()
  $('dataset').addEventListener('change', onDatasetChange)
  $('example').addEventListener('click', showExample)
  $('format').addEventListener('click', () => {
    try {
      writeQuery(readQuery())
    } catch (e) {
      showQueryError(e.message)
    }
  })
  $('query').addEventListener('input', () => {
    try {
      syncPicker(readQuery())
      showQueryError(null)
    } catch (e) {
      showQueryError(e.message)
    }
  })
  $('run').addEventListener('click', () => run())
  $('continue').addEventListener('click', resume)
  $('record-close').addEventListener('click', closeRecord)
  // a block row (click or Enter) or a cut raw line opens the record
  $('blocks').tBodies[0].addEventListener('click', (e) => {
    const row = e.target.closest('tr')
    if (row?.dataset.seq) openRecord(row.dataset.seq)
  })
  $('blocks').tBodies[0].addEventListener('keydown', (e) => {
    const row = e.target.closest('tr')
    if (e.key === 'Enter' && row?.dataset.seq) openRecord(row.dataset.seq)
  })
  $('raw').addEventListener('click', (e) => {
    const seq = e.target.dataset?.open
    if (seq) openRecord(seq)
  })
  $('stop').addEventListener('click', stop)
  await onDatasetChange()
  setInterval(() => {
    if (document.visibilityState === 'visible') refreshInfo().catch(() => {})
  }, 3000)
  document.body.dataset.ready = '1'
}

init().catch((e) => {
  setState('error')
  showBody(`could not load the page: ${e.message}`)
})
