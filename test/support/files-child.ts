/**
 * Child process of test/store-files.test.ts.
 *   meta DIR   write DIR/dataset.json (traced with strace by the test)
 *   lock DIR   print "ready", wait for a line on stdin, open DIR as the cold store's writer, print
 *              "won" or "busy <message>", then hold the lock until stdin ends
 */
import { DiskColdStore } from '../../src/store/cold/disk-store.ts'
import { writeDatasetMeta } from '../../src/store/dataset-dir.ts'

const [what, dir] = process.argv.slice(2)
if (what === 'meta') writeDatasetMeta(dir, { format: 'solportal-dataset', version: 1, includeVotes: true })
else if (what === 'lock') {
  let store: DiskColdStore | null = null
  process.stdin.resume()
  const ended = new Promise((r) => process.stdin.on('end', r))
  process.stdout.write('ready\n')
  await new Promise((r) => process.stdin.once('data', r))
  try {
    store = await DiskColdStore.open(dir, { fsync: false })
    process.stdout.write('won\n')
  } catch (e) {
    process.stdout.write(`busy ${(e as Error).message}\n`)
  }
  await ended
  await store?.close()
} else throw new Error(`unknown action ${what}`)
