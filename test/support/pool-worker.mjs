// A worker thread for test/worker-pool.test.ts: answers `{ id, op }` requests. `echo`: its value
// back (and the byte length of `bytes`, when sent); `note`: a message that answers no request
// (`{ note }`), then the answer; `throw`: an uncaught exception; `exit`: process.exit(3); `hang`:
// a loop that never yields.
import { parentPort, threadId, workerData } from 'node:worker_threads'

parentPort?.on('message', (m) => {
  if (m.op === 'echo')
    parentPort.postMessage({ id: m.id, value: m.value, thread: threadId, bytes: m.bytes?.byteLength, data: workerData })
  else if (m.op === 'note') {
    parentPort.postMessage({ note: m.value })
    parentPort.postMessage({ id: m.id, value: m.value })
  } else if (m.op === 'throw') throw new Error('boom')
  else if (m.op === 'exit') process.exit(3)
  else if (m.op === 'hang') for (;;);
})
