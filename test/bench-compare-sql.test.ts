// bench/compare: the PostgreSQL side produces the same JSON lines as solportal (after parsing; key order
// kept) on the bundled sample (the whole mainnet block 254170887 + the litesvm chain: failed
// transactions, inner instructions, logs with arbitrary text, token balances, rewards). Needs a local
// PostgreSQL (the Debian package) and root (initdb runs as `postgres` through runuser): skipped otherwise.
import assert from 'node:assert/strict'
import { existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadDataset } from '../bench/compare/load.ts'
import { PgCluster, PsqlSession } from '../bench/compare/pg.ts'
import { INDEXES, querySql, schemaSql } from '../bench/compare/sql.ts'
import { runImport } from '../src/ingest/import/index.ts'
import { sampleArchives } from '../src/ingest/sample.ts'
import { executeQuery, parseQuery } from '../src/query/index.ts'
import { openDatasetDir } from '../src/store/dataset-dir.ts'

const havePg = existsSync('/usr/lib/postgresql') && process.getuid?.() === 0
const WHIRLPOOL = 'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc'
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'

const canon = (line: string) => JSON.stringify(JSON.parse(line))

test(
  'SQL → JSON lines equal solportal on the bundled sample',
  { skip: havePg ? false : 'needs root and the Debian postgresql package' },
  async () => {
    const work = join(tmpdir(), `bench-compare-test-${process.pid}`)
    rmSync(work, { recursive: true, force: true })
    const ds = join(work, 'ds')
    await runImport(ds, sampleArchives(), { progress: 'none' })
    const pg = await PgCluster.start(join(work, 'pg'), () => undefined)
    let session: PsqlSession | null = null
    const store = await openDatasetDir(ds)
    try {
      pg.psql(['-c', schemaSql()])
      await loadDataset(pg, ds, null)
      for (const ix of INDEXES) pg.psql(['-c', ix])
      pg.psql(['-c', 'ANALYZE'])
      session = new PsqlSession(pg)
      const from = store.firstBlock()!
      const to = store.head()!.number
      const all = (names: string) => Object.fromEntries(names.split(' ').map((n) => [n, true]))
      const fields = {
        block: all('number hash parentNumber parentHash height timestamp'),
        transaction: all(
          'transactionIndex version accountKeys addressTableLookups numReadonlySignedAccounts numReadonlyUnsignedAccounts numRequiredSignatures recentBlockhash signatures err fee computeUnitsConsumed loadedAddresses feePayer hasDroppedLogMessages',
        ),
        instruction: all(
          'transactionIndex instructionAddress programId accounts data d1 d2 d4 d8 error computeUnitsConsumed isCommitted hasDroppedLogMessages',
        ),
        log: all('transactionIndex logIndex instructionAddress programId kind message'),
        balance: all('transactionIndex account pre post'),
        tokenBalance: all(
          'transactionIndex account preMint postMint preDecimals postDecimals preProgramId postProgramId preOwner postOwner preAmount postAmount',
        ),
        reward: all('pubkey lamports postBalance rewardType commission'),
      }
      const payer = (
        await session.text(`SELECT fee_payer FROM transactions GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)
      ).trim()
      const queries: Record<string, unknown>[] = [
        {
          fields,
          includeAllBlocks: true,
          transactions: [{}],
          instructions: [{}],
          logs: [{}],
          balances: [{}],
          tokenBalances: [{}],
          rewards: [{}],
        },
        {
          fields: {
            block: { number: true },
            instruction: fields.instruction,
            log: fields.log,
            transaction: fields.transaction,
          },
          instructions: [{ programId: [WHIRLPOOL], transaction: true, innerInstructions: true, logs: true }],
        },
        {
          fields: {
            block: { number: true },
            instruction: fields.instruction,
            balance: fields.balance,
            tokenBalance: fields.tokenBalance,
          },
          instructions: [
            {
              programId: [TOKEN],
              d1: ['0x03', '0x0C'],
              transactionBalances: true,
              transactionTokenBalances: true,
              transactionInstructions: true,
            },
          ],
        },
        {
          fields: { block: { number: true }, instruction: { accounts: true }, transaction: { feePayer: true } },
          transactions: [{ feePayer: [payer], instructions: true, balances: true, logs: true, tokenBalances: true }],
        },
        { fields: { instruction: {} }, instructions: [{ isCommitted: false }] },
        { fields: { reward: { pubKey: true, lamports: true } }, rewards: [{}] },
      ]
      for (const q of queries) {
        const body = { type: 'solana', fromBlock: from, toBlock: to, ...q }
        const want: string[] = []
        for await (const b of executeQuery(store, parseQuery(body), { to, finalizedOnly: false }))
          want.push(canon(b.line))
        const text = await session.text(querySql(body))
        const got = text
          .split('\n')
          .filter((l) => l !== '')
          .map(canon)
        assert.ok(want.length > 0)
        assert.equal(got.length, want.length, JSON.stringify(q).slice(0, 200))
        for (let i = 0; i < want.length; i++)
          assert.equal(got[i], want[i], `${JSON.stringify(q).slice(0, 200)}: line ${i + 1}`)
      }
    } finally {
      await session?.close()
      await store.close()
      pg.stop()
      rmSync(work, { recursive: true, force: true })
    }
  },
)
