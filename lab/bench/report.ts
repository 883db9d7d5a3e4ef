// The bench's result model (written as JSON) and its console table. Every figure with a floor carries
// ratio = value / floor, computed here and nowhere else.

export interface Figure {
  label: string;
  unit: string;
  value: number;
  /** The physical floor measured (or derived from counts measured) in the same run. */
  floor?: number;
  ratio?: number;
  /** Highest acceptable ratio, when the brief sets one. */
  target?: number;
}

export interface Section {
  id: SectionId;
  title: string;
  /** What the floor is, in words. */
  floorIs: string;
  figures: Figure[];
  /** Formulas of derived figures, printed under the table. */
  formulas?: string[];
  /** Raw inputs and counts behind the figures. */
  details: Record<string, unknown>;
}

export const SECTION_IDS = [
  'pollerCpu',
  'requests',
  'cost',
  'coldStart',
  'endToEnd',
  'catchUp',
  'catchUpMeasured',
  'shards',
  'awsModel',
  'history',
  'sharedToken',
  'freshness',
  'parse',
] as const;
export type SectionId = (typeof SECTION_IDS)[number];

export interface BenchReport {
  date: string;
  command: string;
  machine: { cpu: string; cores: number; node: string; platform: string };
  options: Record<string, unknown>;
  sections: Section[];
  durationSeconds: number;
}

export function figure(label: string, unit: string, value: number, floor?: number, target?: number): Figure {
  if (floor === undefined) return { label, unit, value };
  return {
    label,
    unit,
    value,
    floor,
    ratio: value / floor,
    ...(target === undefined ? {} : { target }),
  };
}

/** Figures whose ratio exceeds their target. */
export function belowTarget(report: BenchReport): Array<{ section: string; figure: Figure }> {
  return report.sections.flatMap((section) =>
    section.figures
      .filter((f) => f.target !== undefined && f.ratio !== undefined && f.ratio > f.target)
      .map((f) => ({ section: section.title, figure: f })),
  );
}

export function formatNumber(value: number): string {
  const abs = Math.abs(value);
  if (abs === 0) return '0';
  if (abs >= 100_000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  if (abs >= 0.01) return value.toFixed(3);
  return value.toPrecision(3);
}

/** A plain-text table (also valid inside a Markdown code block). */
export function renderTable(report: BenchReport): string {
  const header = ['Figure', 'Measured', 'Floor', 'Ratio', 'Target', ''];
  const figureRows = report.sections.map((section) =>
    section.figures.map((f) => {
      const over = f.target !== undefined && f.ratio !== undefined && f.ratio > f.target;
      return [
        `   ${f.label}`,
        `${formatNumber(f.value)} ${f.unit}`,
        f.floor === undefined ? '' : `${formatNumber(f.floor)} ${f.unit}`,
        f.ratio === undefined ? '' : `${f.ratio.toFixed(2)}x`,
        f.target === undefined ? '' : `<= ${f.target}x`,
        f.target === undefined || f.ratio === undefined ? '' : over ? 'ABOVE' : 'ok',
      ];
    }),
  );
  const widths = header.map((title, column) =>
    Math.max(title.length, ...figureRows.flat().map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[0] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ')
      .trimEnd();
  const out = [line(header), widths.map((width) => '-'.repeat(width)).join('  ')];
  report.sections.forEach((section, index) => {
    out.push(`${index + 1}. ${section.title}`, `   floor: ${section.floorIs}`);
    for (const row of figureRows[index] ?? []) out.push(line(row));
  });
  const formulas = report.sections.flatMap((section) => section.formulas ?? []);
  if (formulas.length > 0) out.push('', ...formulas);
  return out.join('\n');
}

export function renderHeader(report: BenchReport): string {
  const m = report.machine;
  return [
    `order-feed-ingester bench, ${report.date}`,
    `machine: ${m.cpu}, ${m.cores} cores, Node ${m.node}, ${m.platform}`,
    `command: ${report.command}`,
  ].join('\n');
}
