/** A growing list of int32 values (ids, codes, offsets) in one typed array, for columns built block by block. */
export class IdList {
  private a = new Int32Array(1024)
  private n = 0

  get length(): number {
    return this.n
  }

  /** shortened (never longer) */
  set length(n: number) {
    if (n > this.n) throw new Error('IdList: cannot grow by length')
    this.n = n
  }

  push(x: number): void {
    if (this.n === this.a.length) {
      const b = new Int32Array(this.a.length * 2)
      b.set(this.a)
      this.a = b
    }
    this.a[this.n++] = x
  }

  /** the values so far (a view: valid until the next push) */
  view(): Int32Array {
    return this.a.subarray(0, this.n)
  }
}
