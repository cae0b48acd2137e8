// `node --import ./test/support/loaded-modules.mjs ...`: appends the URL of every module the process
// loads (main thread) to the file named by LOADED_MODULES_FILE, one a line: what a command loads.
import { register } from 'node:module'

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  appendFileSync(process.env.LOADED_MODULES_FILE, url + '\\n')
  return next(url, context)
}`)}`,
)
