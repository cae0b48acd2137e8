/**
 * What the server answers outside `/datasets`: the OpenAPI document (`/openapi.json`) and the
 * query page (`/`, its script and style under `/ui/`). The page is plain static files from
 * `src/server/ui/` (no build step, nothing loaded from elsewhere: the Content-Security-Policy
 * allows this origin only).
 */
import { readFileSync } from 'node:fs'
import type http from 'node:http'
import { openApiDocument, type OpenApiOptions } from './openapi.ts'

const UI_DIR = new URL('./ui/', import.meta.url)

const PAGE_FILES: { readonly [path: string]: { file: string; type: string } } = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/ui/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
}

const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
  'X-Content-Type-Options': 'nosniff',
}

export class Pages {
  private openapi: string | null = null
  private readonly files = new Map<string, Buffer>()

  constructor(private readonly opts: OpenApiOptions) {}

  /** The OpenAPI document as served (built once). */
  openApiText(): string {
    return (this.openapi ??= JSON.stringify(openApiDocument(this.opts)))
  }

  private file(name: string): Buffer {
    let b = this.files.get(name)
    if (!b) this.files.set(name, (b = readFileSync(new URL(name, UI_DIR))))
    return b
  }

  /** Answers the request when the path is one of these pages; false otherwise (not written to). */
  handle(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): boolean {
    let body: Buffer
    let type: string
    if (pathname === '/openapi.json') {
      body = Buffer.from(this.openApiText())
      type = 'application/json'
    } else {
      const page = PAGE_FILES[pathname]
      if (!page) return false
      body = this.file(page.file)
      type = page.type
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET, HEAD' })
      res.end(`Method ${req.method} not allowed, use GET`)
      return true
    }
    res.writeHead(200, {
      'Content-Type': type,
      'Content-Length': body.length,
      'Cache-Control': 'no-cache',
      ...SECURITY_HEADERS,
    })
    res.end(req.method === 'HEAD' ? undefined : body)
    return true
  }
}
