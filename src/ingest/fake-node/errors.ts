/** The fake node's JSON-RPC errors, and the request it answers by stalling. */

/** a JSON-RPC error answer with the node's code */
export class JsonRpcFault extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

/** a request answered with headers and a few bytes, then nothing (`{ kind: 'stall' }`) */
export class StallRequest extends Error {}
