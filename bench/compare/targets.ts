/** The targets table of the comparison bench: each target, the measured value, met or not, and notes. */

export interface TargetRow {
  target: string
  measured: string
  /** null: not measured in this run */
  met: boolean | null
  /** what bounds it when not met (a profile summary), or how it was measured */
  notes: string
  /** a missed speed target: what the cores allow a run (bench/support.ts `cpuFloor`) */
  floor?: string
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')

export function targetsTable(rows: TargetRow[]): string[] {
  return [
    '| target | measured | met? | notes |',
    '|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${cell(r.target)} | ${cell(r.measured)} | ${r.met === null ? 'not measured' : r.met ? 'met' : '**not met**'} | ${cell(r.notes)} |`,
    ),
  ]
}
