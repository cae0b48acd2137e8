/**
 * The query page end to end in headless Chromium (Debian's package, installed here when missing),
 * driven with playwright-core against the real server on loopback: the bundled sample and a live
 * fake chain. The page picks a dataset, builds a query with its schema-driven forms, runs it and
 * shows the blocks the server streams (checked against the same query sent from Node); live tail
 * follows the head across responses and through a fork (409, rollback, resume).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { chromium, type Browser, type Page } from 'playwright-core'
import { BLOCK_MEMBERS } from '../src/catalogue.ts'
import { sampleLines } from '../src/ingest/sample.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'
import { createDemoDataset } from '../src/ingest/realtime/demo.ts'
import { postJson } from './support/http/client.ts'
import { CHROMIUM, ensureChromium } from '../scripts/chromium.ts'

// The few DOM shapes the page-side callbacks use (the project's type check has no DOM library;
// these functions run in the browser).
interface El {
  dataset: Record<string, string | undefined>
  textContent: string | null
  title: string
  value: string
  cells: El[]
  querySelectorAll(selector: string): Iterable<El> & ArrayLike<El>
}
declare const document: {
  getElementById(id: string): El | null
  querySelectorAll(selector: string): Iterable<El> & ArrayLike<El>
}

const skipReason = ensureChromium()
if (skipReason) {
  console.log(`# query page test skipped: ${skipReason}`)
  test('the query page in headless Chromium', { skip: skipReason }, () => {})
}

const silent = { info() {}, warn() {}, error() {} }
const MEMBERS = BLOCK_MEMBERS.map((m) => m.member)

interface Row {
  number: number
  hash: string
  counts: Record<string, number>
}

async function tableRows(page: Page): Promise<Row[]> {
  return page.$$eval('#blocks tbody tr', (rows) =>
    rows.map((r: El) => ({
      number: Number(r.dataset.number),
      hash: r.cells[1].title,
      counts: Object.fromEntries(
        [...r.querySelectorAll('td[data-member]')].map((td: El) => [td.dataset.member!, Number(td.textContent)]),
      ),
    })),
  )
}

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const t0 = Date.now()
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not reached in ${ms} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('the query page in headless Chromium', { skip: skipReason !== null }, () => {
  let browser: Browser
  let page: Page
  let server: PortalServer
  let url: string
  let demo: Awaited<ReturnType<typeof createDemoDataset>>
  let sampleFirst: number
  let sampleHead: number
  let shotDir: string
  const requested: string[] = []

  before(async () => {
    const [{ store }, live] = await Promise.all([
      loadStaticStore(sampleLines()),
      createDemoDataset({
        logger: silent,
        node: { intervalMs: 100, initialBlocks: 20, forkEvery: 0, txPerBlock: 5 },
      }),
    ])
    demo = live
    demo.start()
    sampleFirst = store.firstBlock()!
    sampleHead = store.head()!.number
    server = new PortalServer({
      datasets: new DatasetRegistry([
        { name: 'solana-mainnet', aliases: ['solana-beta'], store, startBlock: 254170887, realTime: false },
        { name: 'solana-mainnet-complete', aliases: ['solana-complete'], store, realTime: false },
        { name: 'solana-demo', aliases: [], store: demo.store, realTime: true },
      ]),
      rateLimit: null,
      log: () => {},
    })
    url = await server.listen(0, '127.0.0.1')
    browser = await chromium.launch({ executablePath: CHROMIUM })
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
    page.on('request', (r) => requested.push(r.url()))
    page.on('pageerror', (e) => console.log(`page error: ${e.message}`))
    shotDir = mkdtempSync(join(tmpdir(), 'solportal-page-'))
  })

  after(async () => {
    await browser?.close()
    await server?.close()
    await demo?.stop()
    // KEEP_SCREENSHOT=1 keeps it (docs/query-page.png is a copy of it)
    if (shotDir && !process.env.KEEP_SCREENSHOT) rmSync(shotDir, { recursive: true, force: true })
  })

  test('pick a dataset, build a query with the forms, run it: the table shows the streamed blocks', async () => {
    await page.goto(`${url}/`)
    await page.waitForSelector('body[data-ready]')
    const names = await page.$$eval('#dataset option', (os: El[]) => os.map((o) => o.value))
    assert.deepEqual(names, ['solana-mainnet', 'solana-mainnet-complete', 'solana-demo'])
    // the example follows the picked dataset while untouched
    assert.equal(JSON.parse(await page.inputValue('#query')).fromBlock, 254170887)
    await page.selectOption('#dataset', 'solana-mainnet-complete')
    await page.waitForFunction((n) => JSON.parse(document.getElementById('query')!.value).fromBlock === n, sampleFirst)
    assert.match(
      (await page.textContent('#dataset-info')) ?? '',
      new RegExp(`start ${sampleFirst} · head ${sampleHead}`),
    )

    await page.fill(
      '#query',
      JSON.stringify({ type: 'solana', fromBlock: sampleFirst, toBlock: sampleHead, transactions: [{}] }),
    )
    // the field picker (from the schema) edits the query ...
    await page.check('input[data-selector="block"][data-field="number"]')
    await page.check('input[data-selector="block"][data-field="hash"]')
    await page.check('input[data-selector="log"][data-field="kind"]')
    // ... and so does the item request form
    await page.selectOption('#request-list', 'logs')
    await page.check('#request-form input[data-filter="kind"][value="data"]')
    await page.check('#request-form input[data-relation="transaction"]')
    await page.click('#request-add')
    await page.selectOption('#request-list', 'instructions')
    await page.fill('#request-form input[data-filter="d1"]', '0x02')
    await page.click('#request-add')
    const query = JSON.parse(await page.inputValue('#query'))
    assert.deepEqual(query.fields, { block: { number: true, hash: true }, log: { kind: true } })
    assert.deepEqual(query.logs, [{ kind: ['data'], transaction: true }])
    assert.deepEqual(query.instructions, [{ d1: ['0x02'] }])
    // a malformed value is refused by the form (the schema's pattern), said in words
    await page.fill('#request-form input[data-filter="d1"]', '0x2')
    await page.click('#request-add')
    assert.match((await page.textContent('#query-error')) ?? '', /^d1: 0x2 is not 0x and 2 hex digits \(1 byte\)$/)
    // no regular expression is shown to the user: placeholders say what a value is
    await page.selectOption('#request-list', 'instructions')
    const placeholders = await page.$$eval('#request-form input[type=text]', (is: El[]) =>
      is.map((i) => (i as unknown as { placeholder: string }).placeholder),
    )
    assert.ok(placeholders.length > 5)
    for (const ph of placeholders) assert.doesNotMatch(ph, /[\^$\[\]{}]/, ph)
    assert.ok(placeholders.some((ph) => ph.startsWith('a base58 address (32 bytes)')))

    await page.click('#run')
    await page.waitForFunction(() => document.getElementById('state')!.textContent === 'done')
    assert.equal(await page.textContent('#status-code'), '200')
    assert.equal(await page.textContent('td[data-header="X-Sqd-Head-Number"]'), String(sampleHead))
    assert.equal(await page.textContent('td[data-header="Content-Type"]'), 'application/jsonl')

    // the same query from Node: the page shows exactly these blocks and counts
    const r = await postJson(`${url}/datasets/solana-mainnet-complete/stream`, query)
    assert.equal(r.status, 200)
    const expected = r.text
      .split('\n')
      .filter((l) => l)
      .map((l) => JSON.parse(l) as Record<string, unknown> & { header: { number: number; hash: string } })
      .map((b) => ({
        number: b.header.number,
        hash: b.header.hash,
        counts: Object.fromEntries(MEMBERS.map((m) => [m, Array.isArray(b[m]) ? (b[m] as unknown[]).length : 0])),
      }))
    assert.ok(expected.length > 5)
    assert.ok(expected.some((b) => b.counts.logs > 0 && b.counts.transactions > 0 && b.counts.instructions > 0))
    assert.deepEqual(await tableRows(page), expected)
    assert.equal(await page.textContent('#block-count'), String(expected.length))
    assert.equal(await page.textContent('#requests'), '1')
    // the raw pane keeps the latest 300 lines, each cut at 2,000 characters
    const raw = await page.$$eval('#raw > div', (d: El[]) => d.map((e) => e.textContent ?? ''))
    const lastLine = r.text.trimEnd().split('\n').pop()!
    assert.equal(raw.length, Math.min(expected.length, 300))
    assert.ok(raw[raw.length - 1].startsWith(lastLine.slice(0, 2000)))

    // records open: a row shows the whole block as JSON
    const lines = r.text.split('\n').filter((l) => l)
    const big = lines.reduce((a, b) => (b.length > a.length ? b : a))
    assert.ok(big.length > 2000, `the longest line has ${big.length} characters`)
    const bigNumber = (JSON.parse(big) as { header: { number: number } }).header.number
    await page.click(`#blocks tbody tr[data-number="${bigNumber}"]`)
    await page.waitForFunction(() => !(document.getElementById('record') as unknown as { hidden: boolean }).hidden)
    assert.deepEqual(JSON.parse((await page.textContent('#record-body')) ?? ''), JSON.parse(big))
    await page.click('#record-close')
    // a raw line cut at 2,000 characters opens whole too (the mainnet block's instructions)
    const mainnetQuery = {
      type: 'solana',
      fromBlock: 254170887,
      toBlock: 254170887,
      fields: { block: { number: true }, instruction: { programId: true } },
      instructions: [{}],
    }
    await page.fill('#query', JSON.stringify(mainnetQuery))
    await page.click('#run')
    await page.waitForFunction(() => document.getElementById('state')!.textContent === 'done')
    await page.click('#raw-lines summary')
    const cutLines = await page.$$('#raw button[data-open]')
    assert.equal(cutLines.length, 1, 'the raw line is cut')
    await cutLines[0].click()
    const mainnetLine = (await postJson(`${url}/datasets/solana-mainnet-complete/stream`, mainnetQuery)).text.trim()
    assert.ok(mainnetLine.length > 2000)
    assert.deepEqual(JSON.parse((await page.textContent('#record-body')) ?? ''), JSON.parse(mainnetLine))
    await page.click('#record-close')
    await page.click('#raw-lines summary')
    // the table again, for the layout checks and the screenshot
    await page.fill('#query', JSON.stringify(query))
    await page.click('#run')
    await page.waitForFunction(() => document.getElementById('state')!.textContent === 'done')

    // at 1440 px every column of the table is on screen, without scrolling sideways
    await page.setViewportSize({ width: 1440, height: 900 })
    const widths = await page.$eval('#blocks', (t: El) => {
      const box = (t as unknown as { parentElement: { scrollWidth: number; clientWidth: number } }).parentElement
      return { scroll: box.scrollWidth, client: box.clientWidth }
    })
    assert.ok(widths.scroll <= widths.client, `the table needs ${widths.scroll} px in ${widths.client}`)

    await page.locator('header').scrollIntoViewIfNeeded()
    const shot = join(shotDir, 'query-page.png')
    await page.screenshot({ path: shot })
    assert.ok(statSync(shot).size > 10_000)
    console.log(`# screenshot: ${shot}`)

    // a phone: one column, nothing wider than the screen
    await page.setViewportSize({ width: 390, height: 844 })
    const phone = await page.evaluate(() => {
      const d = document as unknown as {
        documentElement: { scrollWidth: number }
        getElementById(id: string): { getBoundingClientRect(): { top: number; bottom: number; left: number } }
      }
      return {
        width: d.documentElement.scrollWidth,
        editorBottom: d.getElementById('editor').getBoundingClientRect().bottom,
        resultsTop: d.getElementById('results').getBoundingClientRect().top,
      }
    })
    assert.ok(phone.width <= 390, `the page is ${phone.width} px wide on a 390 px screen`)
    assert.ok(phone.resultsTop >= phone.editorBottom, 'the results come below the editor')
    const phoneShot = join(shotDir, 'query-page-phone.png')
    await page.screenshot({ path: phoneShot, fullPage: false })
    console.log(`# screenshot: ${phoneShot}`)
    await page.setViewportSize({ width: 1400, height: 1000 })

    // a refused query: the status and the server's reason
    await page.fill('#query', JSON.stringify({ fromBlock: sampleFirst, foo: 1 }))
    await page.click('#run')
    await page.waitForFunction(() => document.getElementById('state')!.textContent === 'error 400')
    assert.equal(await page.textContent('#status-code'), '400')
    assert.match((await page.textContent('#response-body')) ?? '', /Bad request: \.foo: unknown member/)

    // everything came from the server itself
    const origin = new URL(url).origin
    assert.deepEqual(
      requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:')),
      [],
    )
  })

  test('a response the server ends early says so; Continue resumes until the range is done', async () => {
    const { store } = await loadStaticStore(sampleLines())
    // a tiny response budget: every response ends after a few blocks
    const small = new PortalServer({
      datasets: new DatasetRegistry([{ name: 'solana-mainnet-complete', aliases: [], store, realTime: false }]),
      limits: { responseBytes: 20_000 },
      rateLimit: null,
      log: () => {},
    })
    const smallUrl = await small.listen(0, '127.0.0.1')
    try {
      await page.goto(`${smallUrl}/`)
      await page.waitForSelector('body[data-ready]')
      const query = {
        type: 'solana',
        fromBlock: sampleFirst,
        toBlock: sampleHead,
        includeAllBlocks: true,
        fields: { block: { number: true, hash: true }, instruction: { programId: true } },
        instructions: [{}],
      }
      await page.fill('#query', JSON.stringify(query))
      await page.click('#run')
      await page.waitForFunction(() => document.getElementById('state')!.textContent!.startsWith('partial'))
      assert.match(
        (await page.textContent('#state')) ?? '',
        /^partial: the server ended this response at block \d+; Continue resumes$/,
      )
      const first = (await tableRows(page)).length
      assert.ok(first > 0)
      let clicks = 0
      while (((await page.textContent('#state')) ?? '').startsWith('partial')) {
        assert.ok(++clicks < 500, 'the range ends')
        await page.click('#continue')
        await page.waitForFunction(() => {
          const t = document.getElementById('state')!.textContent!
          return t.startsWith('partial') || t === 'done'
        })
      }
      assert.ok(clicks > 0)
      assert.equal(await page.textContent('#state'), 'done')
      // every block of the range, once, as the server gives it in one go
      const r = await postJson(`${url}/datasets/solana-mainnet-complete/stream`, query)
      const want = r.text
        .split('\n')
        .filter((l) => l)
        .map((l) => (JSON.parse(l) as { header: { number: number } }).header.number)
      assert.deepEqual(
        (await tableRows(page)).map((x) => x.number),
        want,
      )
    } finally {
      await small.close()
    }
  })

  test('live tail follows the head across responses and through a fork', async () => {
    await page.goto(`${url}/`)
    await page.waitForSelector('body[data-ready]')
    await page.selectOption('#dataset', 'solana-demo')
    // the untouched example follows the dataset: let it be written before the query replaces it
    await page.waitForFunction(() => !('toBlock' in JSON.parse(document.getElementById('query')!.value)))
    const start = demo.store.head()!.number
    await page.fill(
      '#query',
      JSON.stringify({ type: 'solana', fromBlock: start, includeAllBlocks: true, fields: { block: { number: true } } }),
    )
    await page.check('#tail')
    await page.click('#run')
    await page.waitForFunction(() => document.querySelectorAll('#blocks tbody tr').length >= 5)
    assert.equal(await page.textContent('#state'), 'tailing')

    // hold the chain still, let the page reach its tip, then replace the newest blocks
    demo.node.pause()
    await until(() => demo.store.head()?.number === demo.node.tip.slot, 'the store reaches the node tip')
    const tip = demo.store.head()!
    await page.waitForFunction((n) => {
      const rows = document.querySelectorAll('#blocks tbody tr')
      return rows.length > 0 && Number(rows[rows.length - 1].dataset.number) === n
    }, tip.number)
    assert.ok(demo.node.fork(3) > 0)
    demo.node.resume()
    // the page gets the 409, rolls back, resumes, and goes on past the old tip
    await page.waitForFunction((n) => {
      const rows = document.querySelectorAll('#blocks tbody tr')
      const fork = [...document.querySelectorAll('#events li')].some((li) => li.textContent!.startsWith('fork:'))
      return fork && Number(rows[rows.length - 1].dataset.number) > n + 3
    }, tip.number)
    await page.click('#stop')
    await page.waitForFunction(() => document.getElementById('state')!.textContent === 'stopped')
    demo.node.pause()

    const events = await page.$$eval('#events li', (lis: El[]) => lis.map((li) => li.textContent ?? ''))
    assert.ok(
      events.some((e) => / → 409,/.test(e)),
      events.join('\n'),
    )
    const rows = await tableRows(page)
    assert.ok(rows[rows.length - 1].number > tip.number)
    // the page holds exactly the current chain from where it started (the orphans are gone)
    const r = await postJson(`${url}/datasets/solana-demo/stream`, {
      type: 'solana',
      fromBlock: start,
      toBlock: rows[rows.length - 1].number,
      includeAllBlocks: true,
      fields: { block: { number: true, hash: true } },
    })
    const chain = r.text
      .split('\n')
      .filter((l) => l)
      .map((l) => JSON.parse(l).header as { number: number; hash: string })
    assert.deepEqual(
      rows.map((b) => ({ number: b.number, hash: b.hash })),
      chain,
    )
    assert.ok(Number(await page.textContent('#requests')) >= 3)
    assert.match((await page.textContent('td[data-header="X-Sqd-Head-Number"]')) ?? '', /^\d+$/)
  })
})
