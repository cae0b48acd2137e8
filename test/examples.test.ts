/**
 * The curl + jq client of examples/ (written from the spec alone) against the real server,
 * with a tiny response budget so that it must resume many times.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { sampleLines } from '../src/ingest/sample.ts'
import { normalizeBlock } from '../src/normalize/normalize.ts'
import { DatasetRegistry } from '../src/server/datasets.ts'
import { PortalServer } from '../src/server/http.ts'
import { loadStaticStore } from '../src/server/load.ts'

const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'

// The example needs curl and jq; a machine with only Node.js skips it (and says so).
const missing = ['curl', 'jq', 'bash'].filter((t) => spawnSync(t, ['--version']).status !== 0)

test(
  'examples/whirlpool-swaps.sh lists every committed Whirlpool swap with its signature',
  { skip: missing.length ? `not installed: ${missing.join(', ')}` : false },
  async () => {
    // expected, straight from the normalized records
    const expected: string[] = []
    for await (const line of sampleLines()) {
      const { block } = normalizeBlock(line)
      for (const ix of block.instructions) {
        if (ix.programId !== WHIRLPOOL || !ix.isCommitted || !ix.dataPrefix.startsWith('0xf8c69e91e17587c8')) continue
        const tx = block.transactions.find((t) => t.transactionIndex === ix.transactionIndex)!
        expected.push(
          [
            block.header.number,
            tx.signatures[0],
            ix.instructionAddress.join('.'),
            ix.accounts.slice(0, 3).join(','),
          ].join('\t'),
        )
      }
    }
    assert.ok(expected.length > 0, 'the sample holds Whirlpool swaps')

    const { store } = await loadStaticStore(sampleLines())
    const server = new PortalServer({
      datasets: new DatasetRegistry([{ name: 'solana-mainnet', aliases: [], store, realTime: false }]),
      limits: { responseBytes: 2000 },
      rateLimit: null,
      log: () => {},
    })
    const url = await server.listen(0, '127.0.0.1')
    try {
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        // spawnSync would block the server's event loop: run it asynchronously
        import('node:child_process').then(({ execFile }) => {
          execFile('bash', ['examples/whirlpool-swaps.sh', `${url}/datasets/solana-mainnet`], (err, stdout, stderr) =>
            resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
          )
        })
      })
      assert.equal(r.status, 0, r.stderr)
      assert.deepEqual(r.stdout.trim().split('\n'), expected)
    } finally {
      await server.close()
    }
  },
)
