// The archive line reader (readTextLines: `import`, `readArchive`, `serve --archive`) gives the
// lines node's readline gives, on plain and gzip files: CRLF and lone CR line ends, lines of
// several MB spanning many reads, multi-byte UTF-8 characters cut between reads, empty lines, no
// final newline.
import assert from 'node:assert/strict'
import { createReadStream, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { test } from 'node:test'
import { createGunzip, gzipSync } from 'node:zlib'
import { isBlankLine, joinPieces, lineStart, readLinePieces, readTextLines } from '../src/ingest/archive.ts'
import { tempDir } from './support/cold/util.ts'

/** the reference: readline over the (gunzipped) file */
async function* readlineLines(path: string, gz: boolean): AsyncGenerator<string> {
  const file = createReadStream(path)
  const rl = createInterface({ input: gz ? file.pipe(createGunzip()) : file, crlfDelay: Infinity })
  try {
    yield* rl
  } finally {
    rl.close()
    file.destroy()
  }
}

async function all(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = []
  for await (const l of lines) out.push(l)
  return out
}

test('archive lines equal readline lines, plain and gzip', async () => {
  const dir = tempDir()
  // a long line whose multi-byte characters fall across 64 KiB / 256 KiB read boundaries
  const long = '{"slot":1,"x":"' + 'aé€😀'.repeat(300_000) + '"}'
  const cases: Record<string, string> = {
    simple: 'a\nb\nc\n',
    noFinalNewline: 'a\nbé',
    crlf: 'one\r\ntwo\r\n\r\nthree',
    loneCr: 'x\ry\r\nz\r',
    empty: '',
    blanks: '\n\n \n\t\n',
    long: `${long}\n\n${long}\r\n${long}`,
    // ASCII lines spanning reads (decoded as ASCII), and one whose only multi-byte character is
    // in its last read (decoded as UTF-8: the whole line is checked, not its first piece)
    longAscii: `${'{"a":"x"}'.repeat(200_000)}\n${'b'.repeat(700_000)}é\n${'c'.repeat(300_000)}`,
  }
  for (const [name, text] of Object.entries(cases)) {
    for (const gz of [false, true]) {
      const f = join(dir, `${name}${gz ? '.jsonl.gz' : '.jsonl'}`)
      writeFileSync(f, gz ? gzipSync(text) : text)
      const want = await all(readlineLines(f, gz))
      const got = await all(readTextLines(f))
      assert.equal(got.length, want.length, `${name} gz=${gz}: line count`)
      for (let i = 0; i < want.length; i++) assert.ok(got[i] === want[i], `${name} gz=${gz}: line ${i + 1} differs`)
      // what `import` reads: the same lines, in pieces (kept, they stay valid), and their starts
      const lines: Buffer[][] = []
      for await (const pieces of readLinePieces(f)) lines.push(pieces)
      assert.equal(lines.length, want.length, `${name} gz=${gz}: line count (pieces)`)
      for (let i = 0; i < want.length; i++) {
        const bytes = joinPieces(lines[i])
        assert.ok(bytes.toString('utf8') === want[i], `${name} gz=${gz}: line ${i + 1} differs (pieces)`)
        for (const n of [1, 5, 256])
          assert.deepEqual(lineStart(lines[i], n), bytes.subarray(0, n), `${name}: start ${n}`)
      }
      if (name === 'long') assert.ok(lines[0].length > 1, 'a long line comes in several pieces')
    }
  }
})

test('a blank line is one whose text trims to nothing, told from its bytes', () => {
  for (const text of ['', ' ', '\t \r', '\v\f', '\u00a0', ' \u2028 ', '\ufeff', '{}', ' x', '\u00a0x', 'é', '\u0085']) {
    const b = Buffer.from(text)
    assert.equal(isBlankLine([b]), text.trim() === '', JSON.stringify(text))
    // cut anywhere (a multi-byte character too)
    for (let k = 1; k < b.length; k++) assert.equal(isBlankLine([b.subarray(0, k), b.subarray(k)]), text.trim() === '')
  }
})

test('the start of a line whose first piece is shorter than asked: taken from the pieces it spans', () => {
  const pieces = ['ab', 'cde', 'fgh', 'ij'].map((s) => Buffer.from(s))
  for (let n = 1; n <= 12; n++) assert.equal(lineStart(pieces, n).toString(), 'abcdefghij'.slice(0, n), `n = ${n}`)
})
