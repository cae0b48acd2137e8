/** A query the service refuses; the server answers `400 Bad request: <message>`. */
export class QueryError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'QueryError'
  }
}
